// Command kfake runs franz-go's in-memory Kafka fake (pkg/kfake) as a process
// of its own, so that the broker benchmark in tests/bench can read its CPU
// time from /proc/<pid>/stat exactly as it reads Skein's.
//
// It starts a one-broker cluster on 127.0.0.1 (a free port unless -port is
// given), prints one line "listening on HOST:PORT" to stdout, and runs until
// SIGTERM or SIGINT, when it closes the cluster and exits 0.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 0, "port to listen on; 0 picks a free one")
	flag.Parse()

	// NB: catch the signals before announcing the address, so that a
	// SIGTERM sent as soon as the line is read closes the cluster instead
	// of killing the process.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)

	c, err := kfake.NewCluster(kfake.Ports(*port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfake:", err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", c.ListenAddrs()[0])
	<-signals
	c.Close()
}
