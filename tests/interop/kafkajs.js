'use strict'
// kafkajs against a Skein node: admin (describeCluster, createTopics,
// fetchTopicMetadata, listTopics, fetchTopicOffsets,
// fetchTopicOffsetsByTimestamp) and an idempotent producer. run.sh starts
// the node, runs this, then reads TOPIC back with kcat and compares it with
// the records written to EXPECT_FILE.
//
// Usage: node kafkajs.js BROKER TOPIC MESSAGES EXPECT_FILE
//
// Output: one line per check, "ok <name>" or "FAIL <name>: <why>", which
// run.sh counts; then "kafkajs requests: ..." naming every API and version
// kafkajs sent. Exits 1 if any check failed.
//
// NB: no kafkajs consumer here. kafkajs's consumer always joins a consumer
// group (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetFetch,
// OffsetCommit), which Skein serves from issue 4 on; whoever resolves
// issue 4 adds a consumer check that reads TOPIC back with a group.

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

let failed = 0
const ok = name => console.log(`ok ${name}`)
const fail = (name, why) => {
  failed++
  console.log(`FAIL ${name}: ${why}`)
}

// check runs one named check; fn throws to fail it.
async function check (name, fn) {
  try {
    await fn()
    ok(name)
  } catch (e) {
    fail(name, e && e.stack ? `${e.name}: ${e.message}${e.type ? ` (${e.type})` : ''}` : String(e))
  }
}

function assertEqual (what, got, want) {
  const g = JSON.stringify(got)
  const w = JSON.stringify(want)
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`)
}

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

  await admin.disconnect()
  fs.writeFileSync(expectFile, expected.join('\n') + '\n')
  console.log(`kafkajs requests: ${[...requests].sort().join(', ')}`)
}

main().then(
  () => process.exit(failed ? 1 : 0),
  e => {
    fail('kafkajs', e && e.stack ? e.stack : String(e))
    process.exit(1)
  }
)
