'use strict'
// kafkajs with SASL/PLAIN over TLS (SASL_SSL) against a secured Skein node:
// an admin client creates a topic, a producer writes to it and a consumer
// group reads every record back; a client with a wrong password is refused
// with kafkajs's authentication error. Given SCRAM_PASSWORD, alice also
// logs in with SCRAM-SHA-512 and lists the topics.
//
// Usage: node kafkajs-sasl.js BROKER CA_PEM TOPIC [SCRAM_PASSWORD]

const fs = require('fs')
const { Kafka, logLevel, Partitioners } = require('kafkajs')
const { check, assertEqual, run } = require('./checks')

const [broker, caFile, topic, scramPassword] = process.argv.slice(2)
if (!broker || !caFile || !topic) {
  console.error('usage: node kafkajs-sasl.js BROKER CA_PEM TOPIC')
  process.exit(2)
}
const ssl = { ca: [fs.readFileSync(caFile, 'utf-8')] }
const client = (password, mechanism = 'plain') => new Kafka({
  clientId: 'interop-kafkajs-sasl',
  brokers: [broker],
  ssl,
  sasl: { mechanism, username: 'alice', password },
  logLevel: logLevel.NOTHING,
  retry: { retries: 2 }
})

run('kafkajs-sasl.js', async () => {
  const kafka = client('alice-secret')
  const admin = kafka.admin()
  await check('kafkajs SASL_SSL PLAIN: admin createTopics', async () => {
    await admin.connect()
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true })
    const topics = await admin.listTopics()
    if (!topics.includes(topic)) throw new Error(`${topic} not listed: ${topics}`)
  })
  await admin.disconnect()

  const n = 30
  await check(`kafkajs SASL_SSL PLAIN: ${n} records produced and consumed by a group`, async () => {
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner })
    await producer.connect()
    await producer.send({ topic, messages: Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `v${i}` })) })
    await producer.disconnect()
    const consumer = kafka.consumer({ groupId: 'interop-kafkajs-sasl' })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    const seen = new Set()
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${seen.size} of ${n} records within 60 s`)), 60000)
      consumer.run({
        eachMessage: async ({ message }) => {
          seen.add(message.value.toString())
          if (seen.size === n) {
            clearTimeout(timer)
            resolve()
          }
        }
      })
    })
    await consumer.disconnect()
    assertEqual('distinct records', seen.size, n)
  })

  if (scramPassword) {
    await check('kafkajs SASL_SSL SCRAM-SHA-512: alice lists the topics', async () => {
      const scram = client(scramPassword, 'scram-sha-512').admin()
      await scram.connect()
      try {
        const topics = await scram.listTopics()
        if (!topics.includes(topic)) throw new Error(`${topic} not listed: ${topics}`)
      } finally {
        await scram.disconnect()
      }
    })
  }

  await check('kafkajs SASL_SSL PLAIN: a wrong password is refused (KafkaJSSASLAuthenticationError)', async () => {
    const bad = client('wrong').admin()
    try {
      await bad.connect()
    } catch (e) {
      if (e.name === 'KafkaJSSASLAuthenticationError' || /SASL/.test(e.message)) return
      throw e
    } finally {
      await bad.disconnect()
    }
    throw new Error('connected with a wrong password')
  })
})
