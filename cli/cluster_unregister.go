package cli

// skein cluster unregister-broker: UnregisterBroker, for a broker gone for
// good.

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newClusterUnregisterBrokerCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "unregister-broker ID",
		Short: "Remove a broker gone for good from the cluster's metadata",
		Long: `Remove a broker's registration (UnregisterBroker): it leaves every ISR and
leads nothing, Metadata and DescribeCluster no longer list it, and feature
upgrades no longer wait for it to support them. Meant for a broker that will
not come back; one that runs, or runs again, registers again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 0 {
				return usageError(fmt.Sprintf("broker id %q: want a number, 0 or more", args[0]))
			}
			cl, err := flags.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := flags.requestContext(cmd.Context())
			defer cancel()
			req := kmsg.NewPtrUnregisterBrokerRequest()
			req.BrokerID = int32(id)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return fmt.Errorf("UnregisterBroker: %w", flags.gaveUp(err))
			}
			if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
				return kafkaError(err, derefString(resp.ErrorMessage))
			}
			fmt.Fprintf(stdout, "broker %d unregistered\n", id)
			return nil
		},
	}
}
