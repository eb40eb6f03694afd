'use strict'
// kafkajs against a three-node Skein cluster: describeCluster names the
// three brokers; a topic of replication factor 3 (min.insync.replicas 2)
// has three replicas, all in sync, per partition; an idempotent producer
// (acks=-1) writes MESSAGES records through every broker, and two
// consumers in one group read each of them. run.sh starts the nodes, runs
// this, then reads TOPIC back with kcat and compares it with EXPECT_FILE.
//
// Usage: node kafkajs-cluster.js BROKER,BROKER,BROKER TOPIC MESSAGES EXPECT_FILE
//
// Output: one line per check, "ok <name>" or "FAIL <name>: <why>", which
// run.sh counts. Exits 1 if any check failed.

const fs = require('fs')
const { Kafka, logLevel, Partitioners } = require('kafkajs')

const [brokerList, topic, messagesArg, expectFile] = process.argv.slice(2)
if (!brokerList || !topic || !messagesArg || !expectFile) {
  console.error('usage: node kafkajs-cluster.js BROKER,BROKER,BROKER TOPIC MESSAGES EXPECT_FILE')
  process.exit(2)
}
const brokers = brokerList.split(',')
const total = parseInt(messagesArg, 10)
const partitions = 3

const { check, assertEqual, run } = require('./checks')

const kafka = new Kafka({
  clientId: 'skein-interop-cluster',
  brokers,
  logLevel: logLevel.ERROR,
  retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2000 }
})

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

async function main () {
  const admin = kafka.admin()
  await admin.connect()

  await check('kafkajs (cluster) describeCluster: three brokers', async () => {
    const c = await admin.describeCluster()
    assertEqual('brokers', c.brokers.map(b => `${b.host}:${b.port}`).sort(), [...brokers].sort())
  })

  await check(`kafkajs (cluster) createTopics ${topic} (${partitions} partitions, replication factor 3)`, async () => {
    const created = await admin.createTopics({
      topics: [{ topic, numPartitions: partitions, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }],
      waitForLeaders: true
    })
    assertEqual('created', created, true)
  })

  await check('kafkajs (cluster) fetchTopicMetadata: three replicas in sync per partition, leaders spread', async () => {
    // The followers join the ISR as they fetch: poll a few seconds.
    let last
    for (let i = 0; i < 50; i++) {
      const md = await admin.fetchTopicMetadata({ topics: [topic] })
      last = md.topics[0].partitions.map(p => ({ partition: p.partitionId, leader: p.leader, replicas: p.replicas.length, isr: p.isr.length }))
      if (last.every(p => p.replicas === 3 && p.isr === 3)) break
      await sleep(100)
    }
    last.sort((a, b) => a.partition - b.partition)
    assertEqual('replicas and ISR sizes', last.map(p => [p.replicas, p.isr]), [[3, 3], [3, 3], [3, 3]])
    assertEqual('distinct leaders', new Set(last.map(p => p.leader)).size, 3)
  })

  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner })
  await producer.connect()
  const want = []
  await check(`kafkajs (cluster) idempotent producer: ${total} records, acks=-1`, async () => {
    const messages = []
    for (let i = 0; i < total; i++) {
      messages.push({ key: `k-${i}`, value: `v-${i}` })
      want.push(`k-${i}:v-${i}`)
    }
    const res = await producer.send({ topic, acks: -1, messages })
    assertEqual('partitions written', new Set(res.map(r => r.partition)).size, partitions)
  })
  await producer.disconnect()
  fs.writeFileSync(expectFile, want.join('\n') + '\n')

  await check('kafkajs (cluster) two consumers in one group read every record', async () => {
    const group = `${topic}-group`
    const seen = new Set()
    const consumers = [0, 1].map(() => kafka.consumer({ groupId: group }))
    for (const c of consumers) {
      await c.connect()
      await c.subscribe({ topic, fromBeginning: true })
      await c.run({ eachMessage: async ({ message }) => { seen.add(`${message.key}:${message.value}`) } })
    }
    const deadline = Date.now() + 60000
    while (seen.size < total && Date.now() < deadline) await sleep(100)
    for (const c of consumers) await c.disconnect()
    assertEqual('records read', seen.size, total)
  })

  await admin.disconnect()
}

run('kafkajs-cluster.js', main)
