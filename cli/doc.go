// Package cli is the skein command line: `skein node` runs a node; the other
// subcommands are the command-line client (topic, group, txn, producer,
// produce, consume, cluster, acl, user, quota) and the admin API commands (chaos,
// extension); profile, version and completion serve the command line itself.
// Main runs it; cmd/skein is the binary whose main calls Main and nothing
// else.
//
// # Building skein with more extension kinds
//
// An extension kind is Go code registered under a name
// (extension.Register, in an init function) and compiled into the binary:
// Go has no safe way to load code at run time. The node brings Skein's
// own kinds (package extension/library); a binary with more is a main
// package, in a module of its own, that imports the packages registering
// them, for their init functions, and calls Main, as Caddy's and
// Telegraf's plugins are built. testdata/customskein is one, with a kind
// "upper", which the tests build and ask for its kinds.
//
// # The client
//
// The client commands (topic, group, txn, producer, produce, consume,
// cluster, acl, user, quota) speak the Kafka protocol through franz-go (kgo, and
// kadm for administration), so they work against any Kafka broker; they
// import nothing of Skein's but what starting a node needs. Their shape
// follows kcat and rpk:
//
//   - every one takes --brokers (default 127.0.0.1:9092, or SKEIN_BROKERS)
//     and --timeout, which bounds the dial and each request: a command first
//     asks each seed once for metadata, so an address where no broker
//     answers fails at once with the dial error rather than in kgo's
//     retries;
//   - Kafka errors are printed with their code name, the broker's message
//     and the topic or partition they concern, one line each, and exit 1;
//     a mistake in the command line (an unknown command, with cobra's
//     did-you-mean, a bad flag, a missing argument, a value the command's
//     own checks refuse) is one line and exits 2 (usageErrors);
//   - produce reads stdin to EOF, a record per line, and waits for every
//     record's acknowledgement before exiting, each for at most
//     --delivery-timeout (Kafka's delivery.timeout.ms), after which it says
//     what the partition's leader answered last (batchErrors);
//   - consume assigns partitions directly (no group, nothing committed),
//     resolves --from to one offset per partition first (ListOffsets, by
//     timestamp for a time), and with -e stops at the high watermarks it
//     saw then (the last stable offsets with --isolation read_committed),
//     or gives up when no record comes for --timeout; with -g it is a
//     group member instead, and commits the offsets of what it printed
//     (kgo's AutoCommitMarks, marked after each flush, and a last commit
//     before it leaves);
//   - cluster config and group config describe broker and group
//     resources with DescribeConfigs asking for documentation and
//     synonyms, as kmsg requests (kadm asks for no documentation and knows
//     no group resources), and alter them with IncrementalAlterConfigs;
//     txn abort writes one partition's abort marker (WriteTxnMarkers), as
//     kafka-transactions abort, and find-hanging compares the partitions'
//     open transactions (DescribeProducers) with what the coordinators
//     know, as kafka-transactions find-hanging;
//   - acl create, list and delete are kafka-acls' --add, --list and
//     --remove; delete selects as list does, and refuses to run without
//     --principal or a resource flag unless --all is given;
//   - user create sets a SCRAM credential from a password it salts and
//     hashes itself, read from SKEIN_NEW_PASSWORD or a file, never a flag
//     (SKEIN_PASSWORD is the connecting user's);
//   - group describe shows kadm's Lag (DescribeGroups, OffsetFetch and
//     ListOffsets), as rpk does; group seek commits offsets only for a
//     group with no members, resolving --to as consume resolves --from,
//     and only with --execute: without it, it prints the plan (a dry run,
//     kafka-consumer-groups' habit);
//   - a share group (KIP-932) is described by ShareGroupDescribe and
//     DescribeShareGroupOffsets, sought by AlterShareGroupOffsets and its
//     offsets deleted by DeleteShareGroupOffsets, as kafka-share-groups
//     does; the broker's NON_EMPTY_GROUP is shown, not pre-empted. What a
//     share-partition holds in flight only its leader's admin API says
//     (group describe --admin, GET /v1/share-partitions).
//
// # Settings, output and the shell
//
// Every client and admin API command resolves its settings in one order:
// its flag, its environment variable (SKEIN_BROKERS, SKEIN_ADMIN,
// SKEIN_TLS_CA, ...), --command-config (Kafka's client.properties,
// profile.go), the profile --profile or SKEIN_PROFILE selects, or the
// config file's current one (profiles.go: ~/.config/skein/config.yaml,
// XDG_CONFIG_HOME, SKEIN_CONFIG_FILE), and the default. The files fill only
// what the flags and the environment left unset (securityFlags.resolve,
// once per command); the root's --profile is read through the command the
// flags were bound to (securityFlags.bind). A profile file with a key it
// may not have, or a selected profile that is not there, is a usage error.
// skein profile manages the file, writing it 0600 (it may hold a
// password).
//
// The commands that list and describe take -o text|json|yaml (output.go):
// each builds one value of its answer, with json tags in snake_case and
// numbers as numbers, prints it as json or yaml, or prints its text
// tables from the same value. A command that fails for some of its names
// prints the others and exits 1, in every format.
//
// skein version and --version print the version the Makefile links in
// (-X cli.version, from git describe), else the build information's; skein
// completion prints cobra's scripts, whose __complete calls back into run
// with the same environment (profile names complete from the same file).
//
// # Admin API commands
//
// chaos and extension speak HTTP and JSON to nodes' admin APIs (--admin,
// or SKEIN_ADMIN), which are Skein's own: chaos injects faults (package
// chaos is its client), extension creates, lists, describes and deletes
// the cluster's extension instances and lists the kinds a node has. An
// error prints the node's message and exits 1.
//
// run is the entry point Main and the tests share: it reads only the
// arguments, environment and streams it is given.
package cli
