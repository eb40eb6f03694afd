package main

// skein cluster info: what a Metadata request tells of the cluster.

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

func newClusterCommand(environ []string, stdout io.Writer) *cobra.Command {
	return clientCommand("cluster", "Show the cluster", environ, stdout, newClusterInfoCommand)
}

func newClusterInfoCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "info",
		Short: "Show the cluster id, the controller, the brokers and the number of topics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				// One Metadata request for every topic answers it all.
				m, err := adm.Metadata(ctx)
				if err != nil {
					return err
				}
				internal := 0
				for _, t := range m.Topics {
					if t.IsInternal {
						internal++
					}
				}
				fmt.Fprintf(stdout, "CLUSTER     %s\nCONTROLLER  %d\nTOPICS      %d (%d internal)\n\n",
					m.Cluster, m.Controller, len(m.Topics), internal)
				rows := [][]string{{"BROKER", "HOST", "PORT", "RACK"}}
				for _, b := range m.Brokers {
					rack := ""
					if b.Rack != nil {
						rack = *b.Rack
					}
					id := strconv.Itoa(int(b.NodeID))
					if b.NodeID == m.Controller {
						id += "*"
					}
					rows = append(rows, []string{id, b.Host, strconv.Itoa(int(b.Port)), rack})
				}
				return printTable(stdout, rows)
			})
		},
	}
}
