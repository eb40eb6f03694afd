'use strict'
// kafkajs against a Skein node: admin (describeCluster, createTopics,
// fetchTopicMetadata, listTopics, fetchTopicOffsets,
// fetchTopicOffsetsByTimestamp, fetchOffsets), an idempotent producer, and
// two consumers in one group (kafkajs's roundrobin assignor) reading TOPIC
// back and committing. run.sh starts the node, runs this, then reads TOPIC
// back with kcat and compares it with the records written to EXPECT_FILE.
//
// Usage: node kafkajs.js BROKER TOPIC MESSAGES EXPECT_FILE
//
// Output: one line per check, "ok <name>" or "FAIL <name>: <why>", which
// run.sh counts; then "kafkajs requests: ..." naming every API and version
// kafkajs sent. Exits 1 if any check failed.

const fs = require('fs')
const { Kafka, logLevel, Partitioners, CompressionTypes } = require('kafkajs')

const [broker, topic, messagesArg, expectFile] = process.argv.slice(2)
if (!broker || !topic || !messagesArg || !expectFile) {
  console.error('usage: node kafkajs.js BROKER TOPIC MESSAGES EXPECT_FILE')
  process.exit(2)
}
const total = parseInt(messagesArg, 10)
if (!(total >= 10)) {
  console.error('MESSAGES must be a number, at least 10')
  process.exit(2)
}
const partitions = 3

const { check, assertEqual, run } = require('./checks')

// requests records every API key and version kafkajs sent, from its
// instrumentation events, so the run reports what kafkajs needs from a
// broker.
const requests = new Set()
const instrument = client => {
  client.on(client.events.REQUEST, e => requests.add(`${e.payload.apiName} v${e.payload.apiVersion}`))
}

const kafka = new Kafka({
  clientId: 'skein-interop',
  brokers: [broker],
  logLevel: logLevel.ERROR,
  // Bounded retries: a broker that keeps answering with a retriable error
  // fails the check within seconds instead of kafkajs's default minute.
  retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 }
})

// sumOffsets maps fetchTopicOffsets' answer to partition -> [low, high].
const byPartition = offsets => {
  const m = {}
  for (const p of offsets) m[p.partition] = [Number(p.low), Number(p.high)]
  return m
}

async function main () {
  const admin = kafka.admin()
  instrument(admin)
  await admin.connect()

  await check('kafkajs describeCluster: one broker, the controller', async () => {
    const c = await admin.describeCluster()
    assertEqual('brokers', c.brokers.map(b => `${b.nodeId}@${b.host}:${b.port}`), [`${c.controller}@${broker}`])
  })

  await check(`kafkajs createTopics ${topic} (${partitions} partitions)`, async () => {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
      waitForLeaders: true
    })
    assertEqual('created', created, true)
  })

  await check('kafkajs createTopics of an existing topic: TOPIC_ALREADY_EXISTS', async () => {
    const created = await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] })
    assertEqual('created', created, false)
  })

  await check('kafkajs createTopics with 0 partitions: INVALID_PARTITIONS', async () => {
    let err
    try {
      await admin.createTopics({ topics: [{ topic: `${topic}-zero`, numPartitions: 0 }] })
    } catch (e) {
      err = e
    }
    if (!err) throw new Error('createTopics succeeded')
    const types = (err.errors || [err]).map(e => e.type)
    assertEqual('error types', types, ['INVALID_PARTITIONS'])
  })

  await check('kafkajs fetchTopicMetadata: partitions, leader, replicas, isr', async () => {
    const md = await admin.fetchTopicMetadata({ topics: [topic] })
    assertEqual('topics', md.topics.map(t => t.name), [topic])
    const ps = md.topics[0].partitions
      .map(p => ({ partition: p.partitionId, error: p.partitionErrorCode, leader: p.leader, replicas: p.replicas, isr: p.isr }))
      .sort((a, b) => a.partition - b.partition)
    const want = []
    for (let i = 0; i < partitions; i++) want.push({ partition: i, error: 0, leader: 1, replicas: [1], isr: [1] })
    assertEqual('partitions', ps, want)
  })

  await check('kafkajs listTopics', async () => {
    const names = await admin.listTopics()
    if (!names.includes(topic)) throw new Error(`${topic} missing from ${JSON.stringify(names)}`)
    if (names.includes(`${topic}-zero`)) throw new Error(`${topic}-zero was created`)
  })

  await check('kafkajs fetchTopicOffsets of the empty topic', async () => {
    const m = byPartition(await admin.fetchTopicOffsets(topic))
    assertEqual('offsets', m, { 0: [0, 0], 1: [0, 0], 2: [0, 0] })
  })

  // The idempotent producer: InitProducerId, then Produce with sequence
  // numbers. kafkajs insists on maxInFlightRequests: 1 with idempotence.
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner
  })
  instrument(producer)
  await producer.connect()

  // Two phases with explicit CreateTime timestamps an hour apart, so that
  // ListOffsets by timestamp has an exact answer: the first record of phase
  // B in each partition. Phase A is uncompressed, phase B gzip (the codec
  // kafkajs carries itself); every record has a header.
  const base = Date.now() - 2 * 3600 * 1000
  const tsB = base + 3600 * 1000
  const half = Math.floor(total / 2)
  const expected = []
  const message = (i, ts) => {
    const key = `kjs-${i}`
    const value = `value-${i}-${'x'.repeat(i % 50)}`
    expected.push(`${key}:${value}:src=kafkajs,seq=${i}`)
    return { key, value, timestamp: String(ts), headers: { src: 'kafkajs', seq: String(i) } }
  }
  // send sends messages [from, to) in sends of 10, checking every result.
  const send = async (from, to, ts, compression) => {
    for (let i = from; i < to; i += 10) {
      const messages = []
      for (let j = i; j < Math.min(i + 10, to); j++) messages.push(message(j, ts))
      const results = await producer.send({ topic, messages, acks: -1, compression })
      for (const r of results) {
        if (r.errorCode !== 0) throw new Error(`partition ${r.partition}: error code ${r.errorCode}`)
      }
    }
  }

  let phaseA
  await check(`kafkajs idempotent producer: ${half} records, uncompressed`, async () => {
    await send(0, half, base, CompressionTypes.None)
    phaseA = byPartition(await admin.fetchTopicOffsets(topic))
    const sum = Object.values(phaseA).reduce((s, [low, high]) => s + high - low, 0)
    assertEqual('records in the topic', sum, half)
  })

  await check(`kafkajs idempotent producer: ${total - half} records, gzip`, async () => {
    await send(half, total, tsB, CompressionTypes.GZIP)
    const after = byPartition(await admin.fetchTopicOffsets(topic))
    const sum = Object.values(after).reduce((s, [low, high]) => s + high - low, 0)
    assertEqual('records in the topic', sum, total)
    for (const p of Object.keys(after)) {
      if (after[p][0] !== 0) throw new Error(`partition ${p}: low ${after[p][0]}, want 0`)
    }
  })

  await check('kafkajs fetchTopicOffsetsByTimestamp (ListOffsets by time)', async () => {
    const at = async ts => {
      const m = {}
      for (const p of await admin.fetchTopicOffsetsByTimestamp(topic, ts)) m[p.partition] = Number(p.offset)
      return m
    }
    const highs = byPartition(await admin.fetchTopicOffsets(topic))
    const want = (f) => Object.fromEntries(Object.keys(highs).map(p => [p, f(p)]))
    // Before everything: the first record. Between the phases: the first
    // of phase B, which is where phase A ended. After everything: no
    // record, which kafkajs maps to the high watermark.
    assertEqual('before phase A', await at(base - 1), want(() => 0))
    assertEqual('between the phases', await at(base + 1), want(p => phaseA[p] ? phaseA[p][1] : 0))
    assertEqual('after phase B', await at(tsB + 1), want(p => highs[p][1]))
  })

  await producer.disconnect()

  // allowAutoTopicCreation: false makes kafkajs send Metadata with
  // AllowAutoTopicCreation unset, which the broker must honour even though
  // auto.create.topics.enable is on.
  await check('kafkajs producer with allowAutoTopicCreation: false to a missing topic fails', async () => {
    const missing = `${topic}-missing`
    const p = kafka.producer({
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
      retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 200 }
    })
    instrument(p)
    await p.connect()
    let err
    try {
      await p.send({ topic: missing, messages: [{ value: 'x' }] })
    } catch (e) {
      err = e
    } finally {
      await p.disconnect()
    }
    if (!err) throw new Error('send succeeded')
    const names = await admin.listTopics()
    if (names.includes(missing)) throw new Error(`${missing} was created`)
  })

  // Two consumers in one group read TOPIC from the beginning, committing
  // what eachMessage returned after each batch (kafkajs's autoCommit).
  // Once both hold partitions in one generation, more records are
  // produced, so that the records are shared between members too. At the
  // end every record was consumed and the committed offsets (OffsetFetch)
  // equal the end offsets.
  const groupId = `${topic}-group`
  const extra = 30
  const consumed = new Map() // "key:value:headers" → times consumed
  const latest = {} // member → its newest GROUP_JOIN
  const partitionsOf = {} // member → partitions it consumed from
  const crashes = []
  const consumers = ['c1', 'c2'].map(name => {
    const c = kafka.consumer({
      groupId,
      sessionTimeout: 6000, // group.min.session.timeout.ms
      rebalanceTimeout: 10000,
      // kafkajs heartbeats between fetches only: short waits let a member
      // learn of a rebalance quickly.
      heartbeatInterval: 500,
      maxWaitTimeInMs: 200
    })
    instrument(c)
    c.on(c.events.GROUP_JOIN, e => {
      latest[name] = {
        memberId: e.payload.memberId,
        leaderId: e.payload.leaderId,
        protocol: e.payload.groupProtocol,
        partitions: (e.payload.memberAssignment[topic] || []).slice().sort()
      }
    })
    c.on(c.events.CRASH, e => crashes.push(`${name}: ${e.payload.error}`))
    return { name, c }
  })
  const eachMessage = name => async ({ partition, message }) => {
    const h = Object.entries(message.headers || {}).map(([k, v]) => `${k}=${v}`).join(',')
    const rec = `${message.key}:${message.value}:${h}`
    consumed.set(rec, (consumed.get(rec) || 0) + 1)
    ;(partitionsOf[name] = partitionsOf[name] || new Set()).add(partition)
  }
  // waitUntil polls cond every 50 ms for at most ms.
  const waitUntil = async (what, cond, ms) => {
    const deadline = Date.now() + ms
    while (!(await cond())) {
      if (crashes.length) throw new Error(`consumer crashed: ${crashes.join('; ')}`)
      if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`)
      await new Promise(resolve => setTimeout(resolve, 50))
    }
  }
  const distinctWanted = () => expected.filter(r => consumed.has(r)).length

  let shared // the two members' partitions in a generation with both
  await check(`kafkajs group consumers: two members in ${groupId} consume all ${total} records`, async () => {
    for (const { name, c } of consumers) {
      await c.connect()
      await c.subscribe({ topics: [topic], fromBeginning: true })
      await c.run({ eachMessage: eachMessage(name) })
    }
    await waitUntil('all records consumed', () => distinctWanted() === total, 30000)
  })

  await check('kafkajs group consumers: both members hold partitions in one generation, disjoint', async () => {
    await waitUntil('a generation with both members', () => {
      const [a, b] = [latest.c1, latest.c2]
      if (!a || !b || a.leaderId !== b.leaderId || a.memberId === b.memberId) return false
      const all = [...a.partitions, ...b.partitions].sort()
      return a.partitions.length > 0 && b.partitions.length > 0 && JSON.stringify(all) === '[0,1,2]'
    }, 30000)
    shared = { c1: latest.c1.partitions, c2: latest.c2.partitions }
  })

  await check(`kafkajs group consumers: ${extra} records produced while both are members, all consumed`, async () => {
    if (!shared) throw new Error('the group never had both members')
    const p = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    instrument(p)
    await p.connect()
    try {
      const messages = []
      for (let i = total; i < total + extra; i++) messages.push(message(i, Date.now()))
      await p.send({ topic, messages, acks: -1 })
    } finally {
      await p.disconnect()
    }
    await waitUntil('all records consumed', () => distinctWanted() === total + extra, 30000)
  })

  for (const { c } of consumers) await c.disconnect()
  const dups = [...consumed.values()].filter(n => n > 1).length
  console.log(`kafkajs group ${groupId}: protocol ${latest.c1 && latest.c1.protocol}; ` +
    `assigned with both members c1 ${JSON.stringify(shared && shared.c1)}, c2 ${JSON.stringify(shared && shared.c2)}; ` +
    `consumed from partitions c1 ${JSON.stringify([...(partitionsOf.c1 || [])].sort())}, c2 ${JSON.stringify([...(partitionsOf.c2 || [])].sort())}; ` +
    `${dups} records consumed more than once`)

  await check(`kafkajs admin fetchOffsets: ${groupId}'s committed offsets equal the end offsets`, async () => {
    const highs = byPartition(await admin.fetchTopicOffsets(topic))
    const want = Object.fromEntries(Object.keys(highs).map(p => [p, highs[p][1]]))
    const [got] = await admin.fetchOffsets({ groupId, topics: [topic] })
    assertEqual('committed', Object.fromEntries(got.partitions.map(p => [p.partition, Number(p.offset)])), want)
  })

  await admin.disconnect()
  fs.writeFileSync(expectFile, expected.join('\n') + '\n')
  console.log(`kafkajs requests: ${[...requests].sort().join(', ')}`)
}

run('kafkajs', main)
