'use strict'
// kafkajs's transactions against a Skein node. A transactional producer
// (transactionalId, idempotent, one request in flight) writes OUT:
// transactions committed and aborted, one left open while a read_committed
// consumer reads, one of a zombie fenced by a second producer with the same
// transactionalId, and a copy of IN with transaction.sendOffsets (aborted
// once, then committed). A consumer with readUncommitted: false, running
// throughout, reads exactly the committed records, and the group's offsets
// (admin.fetchOffsets) are the ones the committed sendOffsets sent. run.sh
// starts the node and runs this.
//
// Usage: node kafkajs-txn.js BROKER PREFIX
//
// Output: one line per check, "ok <name>" or "FAIL <name>: <why>", which
// run.sh counts; then "kafkajs requests: ..." naming every API and version
// kafkajs sent. Exits 1 if any check failed.

const { Kafka, logLevel, Partitioners } = require('kafkajs')
const { check, assertEqual, run } = require('./checks')

const [broker, prefix] = process.argv.slice(2)
if (!broker || !prefix) {
  console.error('usage: node kafkajs-txn.js BROKER PREFIX')
  process.exit(2)
}
const IN = `${prefix}-in`
const OUT = `${prefix}-out`
const GROUP = `${prefix}-copier`
const partitions = 3
const input = 30 // records in IN

const requests = new Set()
const instrument = client => {
  client.on(client.events.REQUEST, e => requests.add(`${e.payload.apiName} v${e.payload.apiVersion}`))
}

const kafka = new Kafka({
  clientId: 'skein-interop-txn',
  brokers: [broker],
  logLevel: logLevel.ERROR,
  retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000 }
})

const sorted = a => a.slice().sort()
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// waitUntil polls cond every 20 ms for at most ms.
const waitUntil = async (what, cond, ms = 30000) => {
  const deadline = Date.now() + ms
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`)
    await sleep(20)
  }
}

async function main () {
  const admin = kafka.admin()
  instrument(admin)
  await admin.connect()

  await check(`kafkajs createTopics ${IN} and ${OUT} (${partitions} partitions)`, async () => {
    const created = await admin.createTopics({
      topics: [IN, OUT].map(topic => ({ topic, numPartitions: partitions, replicationFactor: 1 })),
      waitForLeaders: true
    })
    assertEqual('created', created, true)
  })

  await check(`kafkajs plain producer: ${input} records into ${IN}`, async () => {
    const p = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    await p.connect()
    try {
      const messages = []
      for (let i = 0; i < input; i++) messages.push({ key: `k${i % 7}`, value: `in-${i}` })
      await p.send({ topic: IN, messages, acks: -1 })
    } finally {
      await p.disconnect()
    }
  })

  // What was written to OUT, as "key:value": committed, and everything.
  const committed = []
  const all = []

  // reading starts a consumer reading OUT from the beginning, running
  // until stopped. Its caughtUp waits until it has read every record of
  // want, then for five more fetch responses, and checks it read exactly
  // those.
  const reading = async (groupId, readUncommitted) => {
    const seen = []
    let fetches = 0
    const crashes = []
    const consumer = kafka.consumer({ groupId, readUncommitted, maxWaitTimeInMs: 100 })
    instrument(consumer)
    consumer.on(consumer.events.FETCH, () => { fetches++ })
    consumer.on(consumer.events.CRASH, e => crashes.push(String(e.payload.error)))
    await consumer.connect()
    await consumer.subscribe({ topics: [OUT], fromBeginning: true })
    await consumer.run({
      eachMessage: async ({ message }) => { seen.push(`${message.key}:${message.value}`) }
    })
    const caughtUp = async want => {
      await waitUntil(`${groupId} reads every record`, () => {
        if (crashes.length) throw new Error(`${groupId} crashed: ${crashes.join('; ')}`)
        const has = new Set(seen)
        return want.every(r => has.has(r))
      })
      const after = fetches + 5
      await waitUntil('five more fetches', () => fetches >= after)
      assertEqual(readUncommitted ? 'read_uncommitted' : 'read_committed', sorted(seen), sorted(want))
    }
    return { caughtUp, stop: () => consumer.disconnect() }
  }
  // The reader: readUncommitted: false, running throughout.
  const reader = await reading(`${prefix}-reader`, false)
  const caughtUp = () => reader.caughtUp(committed)

  const producer = (opts = {}) => {
    const p = kafka.producer({
      transactionalId: `${prefix}-tx`,
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
      ...opts
    })
    instrument(p)
    return p
  }
  const send = async (txn, values) => {
    const messages = values.map(v => ({ key: `k-${v}`, value: v }))
    await txn.send({ topic: OUT, messages, acks: -1 })
    return messages.map(m => `${m.key}:${m.value}`)
  }

  const p = producer()
  await check('kafkajs transactional producer: connect', () => p.connect())

  const transaction = async (commit, values) => {
    const txn = await p.transaction()
    const recs = await send(txn, values)
    all.push(...recs)
    if (commit) {
      await txn.commit()
      committed.push(...recs)
    } else {
      await txn.abort()
    }
  }

  await check('kafkajs transaction of 10 records committed', () => transaction(true, [...Array(10).keys()].map(i => `c1-${i}`)))
  await check('kafkajs transaction of 10 records aborted', () => transaction(false, [...Array(10).keys()].map(i => `a1-${i}`)))
  await check('kafkajs transaction of 10 records committed after the abort', () => transaction(true, [...Array(10).keys()].map(i => `c2-${i}`)))
  await check('kafkajs readUncommitted: false: the committed records, not the aborted ones', caughtUp)

  await check('kafkajs transaction open: the reader stops before it; committed, the reader reads it', async () => {
    const txn = await p.transaction()
    const recs = await send(txn, [...Array(5).keys()].map(i => `o-${i}`))
    all.push(...recs)
    await caughtUp()
    await txn.commit()
    committed.push(...recs)
    await caughtUp()
  })

  await check('kafkajs zombie fencing: a second producer with the same transactionalId aborts the first one\'s transaction', async () => {
    const txn = await p.transaction()
    const recs = await send(txn, [...Array(5).keys()].map(i => `z-${i}`))
    all.push(...recs)
    // NB: kafkajs's connect asks for an idempotent producer id only; the
    // transactional one (InitProducerId with the transactionalId) waits
    // for the first transaction. It aborts p's and bumps the epoch.
    const p2 = producer()
    await p2.connect()
    const txn2 = await p2.transaction()
    try {
      let err
      try {
        await txn.commit()
      } catch (e) {
        err = e
      }
      if (!err) throw new Error('the zombie committed')
      if (!['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED'].includes(err.type)) throw err
      await caughtUp()
    } finally {
      await txn2.abort()
      await p2.disconnect()
    }
  })
  await p.disconnect().catch(() => {})

  // Consume-transform-produce: a consumer in GROUP reads IN; a copy of
  // what it read goes to OUT in a transaction with sendOffsets of the
  // offsets after it. The first attempt, half the input, is aborted: the
  // group has no offsets. The second copies everything and commits.
  const copier = producer({ transactionalId: `${prefix}-copier-tx` })
  await copier.connect()
  const consumed = [] // messages of IN, with their partitions
  const c = kafka.consumer({ groupId: GROUP, readUncommitted: false, maxWaitTimeInMs: 100 })
  instrument(c)
  await c.connect()
  await c.subscribe({ topics: [IN], fromBeginning: true })
  await c.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => { consumed.push({ partition, message }) }
  })
  // copy copies msgs to OUT, sending the offsets after them, and commits
  // or aborts.
  const copy = async (msgs, commit) => {
    const next = {}
    for (const { partition, message } of msgs) next[partition] = Math.max(next[partition] || 0, Number(message.offset) + 1)
    const txn = await copier.transaction()
    const recs = await send(txn, msgs.map(({ message }) => `copy-${message.value}`))
    all.push(...recs)
    await txn.sendOffsets({
      consumerGroupId: GROUP,
      topics: [{ topic: IN, partitions: Object.entries(next).map(([partition, offset]) => ({ partition: Number(partition), offset: String(offset) })) }]
    })
    if (commit) {
      await txn.commit()
      committed.push(...recs)
    } else {
      await txn.abort()
    }
  }
  const groupOffsets = async () => {
    const [got] = await admin.fetchOffsets({ groupId: GROUP, topics: [IN] })
    return Object.fromEntries(got.partitions.map(p => [p.partition, Number(p.offset)]))
  }

  await check('kafkajs consume-transform-produce: sendOffsets, aborted: the group has no offsets', async () => {
    await waitUntil(`${input} records of ${IN} consumed`, () => consumed.length >= input)
    await copy(consumed.slice(0, input / 2), false)
    assertEqual('committed', await groupOffsets(), { 0: -1, 1: -1, 2: -1 })
  })

  let ends
  await check('kafkajs consume-transform-produce: every record copied, sendOffsets, committed', async () => {
    assertEqual('consumed', consumed.length, input)
    await copy(consumed, true)
    ends = Object.fromEntries((await admin.fetchTopicOffsets(IN)).map(p => [p.partition, Number(p.high)]))
  })
  await c.disconnect()
  await copier.disconnect()

  await check('kafkajs admin fetchOffsets: the group\'s offsets are the ones the committed sendOffsets sent', async () => {
    // EndTxn answers once the commit is decided; the offsets follow with
    // the marker.
    let got
    await waitUntil('the offsets', async () => JSON.stringify(got = await groupOffsets()) === JSON.stringify(ends), 10000)
      .catch(e => { throw new Error(`${e.message}: got ${JSON.stringify(got)}, want ${JSON.stringify(ends)}`) })
  })

  await check('kafkajs readUncommitted: false: exactly the committed records of every transaction', async () => {
    await caughtUp()
    assertEqual('copies', committed.filter(r => r.includes(':copy-')).length, input)
  })
  await reader.stop()

  await check('kafkajs readUncommitted: true: every record written, the aborted ones too', async () => {
    const r = await reading(`${prefix}-uncommitted`, true)
    try {
      await r.caughtUp(all)
    } finally {
      await r.stop()
    }
  })

  await admin.disconnect()
  console.log(`kafkajs requests: ${[...requests].sort().join(', ')}`)
}

run('kafkajs-txn', main)
