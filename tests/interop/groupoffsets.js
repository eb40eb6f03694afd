'use strict'
// Compares a group's committed offsets (kafkajs admin fetchOffsets, an
// OffsetFetch) with a topic's end offsets (fetchTopicOffsets, ListOffsets).
// run.sh runs it after kcat's balanced consumers.
//
// Usage: node groupoffsets.js BROKER GROUP TOPIC
//
// Prints the committed offsets by partition; exits 0 when each equals its
// partition's end offset, 1 when one differs, 2 on an error.

const { Kafka, logLevel } = require('kafkajs')

const [broker, groupId, topic] = process.argv.slice(2)
if (!broker || !groupId || !topic) {
  console.error('usage: node groupoffsets.js BROKER GROUP TOPIC')
  process.exit(2)
}

async function main () {
  const admin = new Kafka({
    clientId: 'skein-interop-groupoffsets',
    brokers: [broker],
    logLevel: logLevel.ERROR,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 }
  }).admin()
  await admin.connect()
  try {
    const ends = {}
    for (const p of await admin.fetchTopicOffsets(topic)) ends[p.partition] = Number(p.high)
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] })
    const got = {}
    for (const p of committed.partitions) got[p.partition] = Number(p.offset)
    console.log(`committed ${JSON.stringify(got)}, end offsets ${JSON.stringify(ends)}`)
    return JSON.stringify(got) === JSON.stringify(ends)
  } finally {
    await admin.disconnect()
  }
}

main().then(
  same => process.exit(same ? 0 : 1),
  e => {
    console.error(e && e.stack ? e.stack : String(e))
    process.exit(2)
  }
)
