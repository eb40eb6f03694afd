package cli

// skein user create|list|delete, on kadm: users' SCRAM credentials
// (AlterUserScramCredentials, DescribeUserScramCredentials), as
// kafka-configs --entity-type users --add-config SCRAM-SHA-256=[...]
// manages them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// envNewPassword holds the password of the user `skein user create`
// creates. NB: SKEIN_PASSWORD is taken: it is the password of the user
// the command connects as (security.go).
const envNewPassword = "SKEIN_NEW_PASSWORD"

// Kafka's bounds on a SCRAM credential's iterations (ScramMechanism's
// minIterations and maxIterations), and the default of --iterations.
const (
	minIterations     = 4096
	maxIterations     = 16384
	defaultIterations = 8192
)

// scramMechanisms are the SCRAM mechanisms, in the order they print.
var scramMechanisms = []kadm.ScramMechanism{kadm.ScramSha256, kadm.ScramSha512}

func newUserCommand(environ []string, stdout io.Writer) *cobra.Command {
	create := func(flags *clientFlags, stdout io.Writer) *cobra.Command {
		return newUserCreateCommand(flags, stdout, environ)
	}
	return clientCommand("user", "Create, list and delete users' SCRAM credentials", environ, stdout,
		create, newUserListCommand, newUserDeleteCommand)
}

// parseMechanisms parses --mechanism values, SCRAM-SHA-256 or
// SCRAM-SHA-512 in any case, each once.
func parseMechanisms(values []string) ([]kadm.ScramMechanism, error) {
	var mechs []kadm.ScramMechanism
	for _, v := range values {
		i := slices.IndexFunc(scramMechanisms, func(m kadm.ScramMechanism) bool {
			return strings.EqualFold(strings.TrimSpace(v), m.String())
		})
		if i < 0 {
			return nil, usageError(fmt.Sprintf("--mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", v))
		}
		if !slices.Contains(mechs, scramMechanisms[i]) {
			mechs = append(mechs, scramMechanisms[i])
		}
	}
	return mechs, nil
}

// userNames returns the NAME arguments, each once: a broker refuses a
// user named twice in one request (DUPLICATE_RESOURCE).
func userNames(args []string) ([]string, error) {
	var names []string
	for _, a := range args {
		if a == "" {
			return nil, usageError("a user name must not be empty")
		}
		if !slices.Contains(names, a) {
			names = append(names, a)
		}
	}
	return names, nil
}

func newUserCreateCommand(flags *clientFlags, stdout io.Writer, environ []string) *cobra.Command {
	var (
		mechanisms   []string
		iterations   int32
		passwordFile string
	)
	cmd := &cobra.Command{
		Use:   "create NAME [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N]",
		Short: "Create a user's SCRAM credential, or change its password",
		Long: "Set the SCRAM credential of user NAME for each --mechanism\n" +
			"(AlterUserScramCredentials): a new user, or a new password for one that has\n" +
			"it already. The password is salted and hashed here; only the salted password\n" +
			"goes to the cluster.\n\n" +
			"The new password is read from " + envNewPassword + ", or from the file\n" +
			"--new-password-file (one line; /dev/stdin reads a pipe), never from a flag,\n" +
			"which other users of the machine could see. " + envPassword + " and --user are\n" +
			"the credentials this command connects with, not the new user's.",
		Example: "  SKEIN_NEW_PASSWORD=alice-secret skein user create alice --mechanism SCRAM-SHA-512\n" +
			"  skein user create bob --new-password-file bob.pw --iterations 16384",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := userNames(args)
			if err != nil {
				return err
			}
			user := names[0]
			mechs, err := parseMechanisms(mechanisms)
			if err != nil {
				return err
			}
			if iterations < minIterations || iterations > maxIterations {
				return usageError(fmt.Sprintf("--iterations %d: want %d to %d, Kafka's bounds", iterations, minIterations, maxIterations))
			}
			password, err := newPassword(environ, passwordFile)
			if err != nil {
				return err
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var errs []error
				for _, m := range mechs {
					upsert := []kadm.UpsertSCRAM{{User: user, Mechanism: m, Iterations: iterations, Password: password}}
					altered, err := adm.AlterUserSCRAMs(ctx, nil, upsert)
					if err != nil {
						return err
					}
					if err := alteredError(altered, user); err != nil {
						errs = append(errs, fmt.Errorf("create user %s (%s): %w", user, m, err))
						continue
					}
					fmt.Fprintf(stdout, "set %s credential of %s (%d iterations)\n", m, user, iterations)
				}
				return errors.Join(errs...)
			})
		},
	}
	cmd.Flags().StringSliceVar(&mechanisms, "mechanism", []string{kadm.ScramSha256.String()}, "SCRAM-SHA-256 or SCRAM-SHA-512 (comma-separated or repeated for both)")
	cmd.Flags().Int32Var(&iterations, "iterations", defaultIterations, fmt.Sprintf("SCRAM iterations, %d to %d", minIterations, maxIterations))
	cmd.Flags().StringVar(&passwordFile, "new-password-file", "", "file holding the new user's password (else "+envNewPassword+")")
	return cmd
}

// newPassword returns the new user's password, from SKEIN_NEW_PASSWORD or
// from file. Both at once is refused rather than one
// silently chosen: a stale variable in the shell would set a password the
// user did not mean.
//
// NB: with neither, there is no prompt: reading a password without echo
// needs golang.org/x/term, which Skein does not depend on.
func newPassword(environ []string, file string) (string, error) {
	env := envValue(environ, envNewPassword)
	switch {
	case env != "" && file != "":
		return "", usageError("give the new password in " + envNewPassword + " or --new-password-file, not both")
	case env != "":
		return env, nil
	case file == "":
		return "", usageError("give the new user's password in " + envNewPassword + " or --new-password-file (" + envPassword + " is the password this command connects with)")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", usageError(fmt.Sprintf("--new-password-file: %v", err))
	}
	// As --password-file: the line's end is not part of the password.
	password := strings.TrimRight(string(b), "\r\n")
	switch {
	case password == "":
		return "", usageError(fmt.Sprintf("--new-password-file %s: empty", file))
	case strings.ContainsAny(password, "\r\n"):
		return "", usageError(fmt.Sprintf("--new-password-file %s: more than one line", file))
	}
	return password, nil
}

// alteredError is user's error in an AlterUserScramCredentials answer.
func alteredError(altered kadm.AlteredUserSCRAMs, user string) error {
	r, ok := altered[user]
	if !ok {
		return errors.New("not in the broker's response")
	}
	return kafkaError(r.Err, r.ErrMessage)
}

// userView is a user's SCRAM credentials as -o json and yaml print them.
type userView struct {
	User        string           `json:"user"`
	Credentials []userCredential `json:"credentials"`
}

type userCredential struct {
	Mechanism  string `json:"mechanism"`
	Iterations int32  `json:"iterations"`
}

func newUserListCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:     "list [NAME...]",
		Aliases: []string{"ls"},
		Short:   "List users' SCRAM credentials: mechanisms and iterations",
		Long: "List the SCRAM credentials (DescribeUserScramCredentials) of the users named, or\n" +
			"of every user that has one: a row for each user and mechanism, with its\n" +
			"iterations. Salts and keys never leave the cluster. A named user without a\n" +
			"credential is an error (RESOURCE_NOT_FOUND), after the others are listed.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := userNames(args)
			if err != nil {
				return err
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeUserSCRAMs(ctx, names...)
				if err != nil {
					return err
				}
				users := []userView{}
				var errs []error
				for _, d := range described.Sorted() {
					if d.Err != nil {
						errs = append(errs, fmt.Errorf("list user %s: %w", d.User, kafkaError(d.Err, d.ErrMessage)))
						continue
					}
					creds := slices.Clone(d.CredInfos)
					slices.SortFunc(creds, func(a, b kadm.CredInfo) int { return int(a.Mechanism) - int(b.Mechanism) })
					u := userView{User: d.User, Credentials: []userCredential{}}
					for _, c := range creds {
						u.Credentials = append(u.Credentials, userCredential{c.Mechanism.String(), c.Iterations})
					}
					users = append(users, u)
				}
				if err := out.write(stdout, users, func() error {
					rows := [][]string{{"USER", "MECHANISM", "ITERATIONS"}}
					for _, u := range users {
						for _, c := range u.Credentials {
							rows = append(rows, []string{u.User, c.Mechanism, fmt.Sprint(c.Iterations)})
						}
					}
					return printTable(stdout, rows)
				}); err != nil {
					return err
				}
				return errors.Join(errs...)
			})
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

func newUserDeleteCommand(flags *clientFlags, stdout io.Writer) *cobra.Command {
	var mechanisms []string
	cmd := &cobra.Command{
		Use:     "delete NAME... [--mechanism SCRAM-SHA-256|SCRAM-SHA-512]",
		Aliases: []string{"rm"},
		Short:   "Delete users' SCRAM credentials",
		Long: "Delete the SCRAM credentials of the users named (AlterUserScramCredentials):\n" +
			"by default those each user has, of either mechanism; with --mechanism, only\n" +
			"those, and a user without one is an error (RESOURCE_NOT_FOUND). ACLs naming\n" +
			"the users stay: see skein acl delete --principal User:NAME.",
		Example: "  skein user delete alice\n  skein user delete bob --mechanism SCRAM-SHA-256",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			names, err := userNames(args)
			if err != nil {
				return err
			}
			mechs, err := parseMechanisms(mechanisms)
			if err != nil {
				return err
			}
			return flags.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				return deleteUsers(ctx, adm, names, mechs, stdout)
			})
		},
	}
	cmd.Flags().StringSliceVar(&mechanisms, "mechanism", nil, "delete only this mechanism's credential: SCRAM-SHA-256 or SCRAM-SHA-512 (default: those the user has)")
	return cmd
}

// deleteUsers deletes the credentials of mechs of each user, or, with no
// mechs, those each has, and reports per user in the order named.
func deleteUsers(ctx context.Context, adm *kadm.Client, names []string, mechs []kadm.ScramMechanism, w io.Writer) error {
	failed := map[string]error{}
	have := map[string][]kadm.ScramMechanism{}
	if len(mechs) > 0 {
		for _, n := range names {
			have[n] = mechs
		}
	} else {
		var err error
		if have, err = userMechanisms(ctx, adm, names, failed); err != nil {
			return err
		}
	}
	// NB: one request per mechanism: kadm keys the answer by user, so two
	// credentials of one user in one request would share one result.
	deleted := map[string][]kadm.ScramMechanism{}
	for _, m := range scramMechanisms {
		var dels []kadm.DeleteSCRAM
		for _, n := range names {
			if slices.Contains(have[n], m) {
				dels = append(dels, kadm.DeleteSCRAM{User: n, Mechanism: m})
			}
		}
		if len(dels) == 0 {
			continue
		}
		altered, err := adm.AlterUserSCRAMs(ctx, dels, nil)
		if err != nil {
			return err
		}
		for _, d := range dels {
			if err := alteredError(altered, d.User); err != nil {
				failed[d.User] = errors.Join(failed[d.User], fmt.Errorf("delete user %s (%s): %w", d.User, m, err))
				continue
			}
			deleted[d.User] = append(deleted[d.User], m)
		}
	}
	var errs []error
	for _, n := range names {
		for _, m := range deleted[n] {
			fmt.Fprintf(w, "deleted %s credential of %s\n", m, n)
		}
		if failed[n] != nil {
			errs = append(errs, failed[n])
		}
	}
	return errors.Join(errs...)
}

// userMechanisms returns the mechanisms each user has a credential of;
// a user with none, or that the broker failed to describe, gets its error
// in failed.
func userMechanisms(ctx context.Context, adm *kadm.Client, names []string, failed map[string]error) (map[string][]kadm.ScramMechanism, error) {
	described, err := adm.DescribeUserSCRAMs(ctx, names...)
	if err != nil {
		return nil, err
	}
	have := map[string][]kadm.ScramMechanism{}
	for _, n := range names {
		d, ok := described[n]
		switch {
		case !ok:
			failed[n] = fmt.Errorf("delete user %s: not in the broker's response", n)
		case errors.Is(d.Err, kerr.ResourceNotFound):
			failed[n] = fmt.Errorf("delete user %s: the user has no SCRAM credential", n)
		case d.Err != nil:
			failed[n] = fmt.Errorf("delete user %s: %w", n, kafkaError(d.Err, d.ErrMessage))
		default:
			for _, c := range d.CredInfos {
				have[n] = append(have[n], c.Mechanism)
			}
		}
	}
	return have, nil
}
