// Package tests holds Skein's end-to-end tests: real Kafka clients (franz-go,
// sarama) against nodes started in this process or as child processes. It
// has no non-test code.
package tests
