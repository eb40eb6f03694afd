'use strict'
// Checks `kcat -L -J` output on stdin against a single-node Skein cluster:
// one broker, id 1 at BROKER, which is the controller; and TOPIC with
// PARTITIONS partitions 0..PARTITIONS-1, each led by broker 1 with replicas
// and ISR [1]. PARTITIONS 0 means TOPIC must not exist. Used by run.sh.
//
// Usage: kcat -L -J | node metadata.js BROKER TOPIC PARTITIONS
// Exits 1 with the difference on stderr when the metadata does not match.

const [broker, topic, n] = process.argv.slice(2)
const md = JSON.parse(require('fs').readFileSync(0, 'utf8'))

function mismatch (what, got, want) {
  console.error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
  process.exit(1)
}

const brokers = [{ id: 1, name: broker }]
if (JSON.stringify(md.brokers) !== JSON.stringify(brokers)) mismatch('brokers', md.brokers, brokers)
if (md.controllerid !== 1) mismatch('controllerid', md.controllerid, 1)

// kcat lists a topic the broker does not know with an error instead of
// leaving it out.
const t = (md.topics || []).find(t => t.topic === topic)
if (Number(n) === 0) {
  if (t && !t.error) mismatch(topic, t, 'absent')
  process.exit(0)
}
if (!t) mismatch(topic, 'absent', `${n} partitions`)
if (t.error) mismatch(`${topic} error`, t.error, undefined)
const got = t.partitions.slice().sort((a, b) => a.partition - b.partition)
const want = []
for (let i = 0; i < Number(n); i++) want.push({ partition: i, leader: 1, replicas: [{ id: 1 }], isrs: [{ id: 1 }] })
if (JSON.stringify(got) !== JSON.stringify(want)) mismatch(`${topic} partitions`, got, want)
