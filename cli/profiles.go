package cli

// Profiles: named sets of client settings (brokers, admin API, TLS, SASL)
// in skein's own config file, selected with --profile or SKEIN_PROFILE, as
// rpk's profiles are. profile.go is something else: Kafka's
// client.properties (--command-config).
//
// Each setting is taken from the first of: its flag, its environment
// variable (SKEIN_BROKERS, SKEIN_ADMIN, SKEIN_TLS_CA, SKEIN_USER, ...),
// --command-config, the selected profile, and the default. A profile is
// applied like --command-config: it fills what the flags and the
// environment left unset (securityFlags.resolve), so every client command
// and every admin-API command honours it without knowing of it.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

const (
	envProfile    = "SKEIN_PROFILE"
	envConfigFile = "SKEIN_CONFIG_FILE"
)

// profileFile is the config file, ~/.config/skein/config.yaml:
//
//	current: local
//	profiles:
//	  local:
//	    brokers: 127.0.0.1:9092
//	    admin: 127.0.0.1:9644
//	  prod:
//	    brokers: a:9093,b:9093
//	    admin: https://a:9644
//	    tls: {ca: /etc/skein/ca.pem, cert: me.pem, key: me-key.pem}
//	    sasl: {mechanism: SCRAM-SHA-512, user: alice, password_env: PROD_PASSWORD}
//
// A key it does not know is an error, naming it.
type profileFile struct {
	// Current is the profile used when neither --profile nor
	// SKEIN_PROFILE names one (skein profile use).
	Current  string              `yaml:"current,omitempty" json:"current,omitempty"`
	Profiles map[string]*profile `yaml:"profiles,omitempty" json:"profiles,omitempty"`
}

// profile is one profile; every field may be left out.
type profile struct {
	// Brokers are the seed brokers, comma-separated (or a YAML list):
	// --brokers.
	Brokers addrList `yaml:"brokers,omitempty" json:"brokers,omitempty"`
	// Admin is the nodes' admin APIs, comma-separated (or a list), each
	// host:port, http://host:port or https://host:port: --admin of the
	// chaos and extension commands.
	Admin addrList `yaml:"admin,omitempty" json:"admin,omitempty"`
	// TLS, present even empty ({}), connects with TLS.
	TLS  *profileTLS  `yaml:"tls,omitempty" json:"tls,omitempty"`
	SASL *profileSASL `yaml:"sasl,omitempty" json:"sasl,omitempty"`
}

type profileTLS struct {
	CA   string `yaml:"ca,omitempty" json:"ca,omitempty"`     // --tls-ca
	Cert string `yaml:"cert,omitempty" json:"cert,omitempty"` // --tls-cert
	Key  string `yaml:"key,omitempty" json:"key,omitempty"`   // --tls-key
	// InsecureSkipVerify accepts any certificate the brokers present:
	// for a test cluster only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty" json:"insecure_skip_verify,omitempty"`
}

// profileSASL is --sasl-mechanism and --user, and the password: in the
// file itself (which is then written 0600), in an environment variable,
// or in a file. At most one of the three.
type profileSASL struct {
	Mechanism    string `yaml:"mechanism,omitempty" json:"mechanism,omitempty"`
	User         string `yaml:"user,omitempty" json:"user,omitempty"`
	Password     string `yaml:"password,omitempty" json:"password,omitempty"`
	PasswordEnv  string `yaml:"password_env,omitempty" json:"password_env,omitempty"`
	PasswordFile string `yaml:"password_file,omitempty" json:"password_file,omitempty"`
}

// addrList is a comma-separated list of addresses, written as a string
// and read from a string or a YAML list.
type addrList string

func (a *addrList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var list []string
		if err := n.Decode(&list); err != nil {
			return err
		}
		*a = addrList(strings.Join(list, ","))
		return nil
	}
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*a = addrList(s)
	return nil
}

// profilesPath returns the config file's path: SKEIN_CONFIG_FILE, else
// skein/config.yaml in XDG_CONFIG_HOME or in HOME's .config; "" when
// environ has none of them.
func profilesPath(environ []string) string {
	if p := envValue(environ, envConfigFile); p != "" {
		return p
	}
	if d := envValue(environ, "XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "skein", "config.yaml")
	}
	if h := envValue(environ, "HOME"); h != "" {
		return filepath.Join(h, ".config", "skein", "config.yaml")
	}
	return ""
}

// readProfiles reads the config file at path; a missing file is an empty
// one (exists false).
func readProfiles(path string) (pf profileFile, exists bool, err error) {
	if path == "" {
		return pf, false, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return pf, false, nil
	}
	if err != nil {
		return pf, false, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&pf); err != nil && !errors.Is(err, io.EOF) {
		return pf, true, fmt.Errorf("%s: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	for name, p := range pf.Profiles {
		if p == nil {
			pf.Profiles[name] = &profile{}
		} else if err := p.check(); err != nil {
			return pf, true, fmt.Errorf("%s: profile %s: %w", path, name, err)
		}
	}
	return pf, true, nil
}

func (p *profile) check() error {
	if s := p.SASL; s != nil {
		n := 0
		for _, v := range []string{s.Password, s.PasswordEnv, s.PasswordFile} {
			if v != "" {
				n++
			}
		}
		if n > 1 {
			return errors.New("sasl: give one of password, password_env and password_file")
		}
	}
	if t := p.TLS; t != nil && (t.Cert == "") != (t.Key == "") {
		return errors.New("tls: cert and key go together")
	}
	return nil
}

// writeProfiles writes the config file, mode 0600 (it may hold a
// password), through a temporary file renamed over it, creating its
// directory (0700) when missing.
func writeProfiles(path string, pf profileFile) error {
	if path == "" {
		return errors.New("no config file: set HOME, XDG_CONFIG_HOME or " + envConfigFile)
	}
	data, err := yaml.Marshal(pf)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config.yaml-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// selectProfile returns the profile named, or the file's current one
// when name is "": nil when there is none. A profile named but missing,
// and a file that does not parse, are errors.
func selectProfile(environ []string, name string) (string, *profile, error) {
	path := profilesPath(environ)
	pf, exists, err := readProfiles(path)
	if err != nil {
		return "", nil, err
	}
	if name == "" {
		name = pf.Current
		if name == "" {
			return "", nil, nil
		}
	}
	if !exists {
		if path == "" {
			return "", nil, fmt.Errorf("profile %q: no config file (set HOME, XDG_CONFIG_HOME or %s)", name, envConfigFile)
		}
		return "", nil, fmt.Errorf("profile %q: there is no %s (skein profile create makes it)", name, path)
	}
	p, ok := pf.Profiles[name]
	if !ok {
		return "", nil, fmt.Errorf("profile %q is not in %s (%s)", name, path, pf.names())
	}
	return name, p, nil
}

// names says which profiles there are.
func (pf profileFile) names() string {
	if len(pf.Profiles) == 0 {
		return "it has no profiles"
	}
	return "its profiles: " + strings.Join(slices.Sorted(maps.Keys(pf.Profiles)), ", ")
}

// profileName is the profile --profile, or SKEIN_PROFILE, names: the
// root's persistent flag, whose default is the variable; "" for the
// file's current one.
func profileName(cmd *cobra.Command, environ []string) string {
	if cmd != nil {
		if f := cmd.Root().PersistentFlags().Lookup("profile"); f != nil {
			return f.Value.String()
		}
	}
	return envValue(environ, envProfile)
}

// addProfileFlag adds --profile to root, for every command.
func addProfileFlag(root *cobra.Command, environ []string) {
	root.PersistentFlags().String("profile", envValue(environ, envProfile),
		"the profile of "+configFileHelp+" whose brokers, admin, TLS and SASL settings to use (env "+envProfile+"); its current one by default")
	_ = root.RegisterFlagCompletionFunc("profile", completeProfiles(environ))
}

const configFileHelp = "~/.config/skein/config.yaml"

// completeProfiles completes a profile's name.
func completeProfiles(environ []string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		pf, _, _ := readProfiles(profilesPath(environ))
		return slices.Sorted(maps.Keys(pf.Profiles)), cobra.ShellCompDirectiveNoFileComp
	}
}

// applyProfile fills what the flags, the environment and --command-config
// left unset from the selected profile, and keeps it for the brokers and
// the admin addresses (clientFlags.seeds, adminFlag.addrs).
func (s *securityFlags) applyProfile() error {
	_, p, err := selectProfile(s.environ, profileName(s.cmd, s.environ))
	if err != nil {
		return err
	}
	s.profile = p
	if p == nil {
		return nil
	}
	if t := p.TLS; t != nil {
		s.tls = true
		s.insecure = s.insecure || t.InsecureSkipVerify
		if s.ca == "" {
			s.ca = t.CA
		}
		if s.cert == "" && s.key == "" {
			s.cert, s.key = t.Cert, t.Key
		}
	}
	if a := p.SASL; a != nil {
		if s.mechanism == "" {
			s.mechanism = a.Mechanism
		}
		// The profile's password is its user's only.
		if s.user == "" || s.user == a.User {
			s.user = a.User
			if s.password == "" && s.passwordFile == "" {
				switch {
				case a.PasswordEnv != "":
					if s.password = envValue(s.environ, a.PasswordEnv); s.password == "" {
						return fmt.Errorf("the profile's sasl.password_env %s is not set", a.PasswordEnv)
					}
				case a.PasswordFile != "":
					s.passwordFile = a.PasswordFile
				default:
					s.password = a.Password
				}
			}
		}
	}
	return nil
}

// adminFlag is --admin of the admin-API commands (chaos, extension): the
// flag, SKEIN_ADMIN, the profile's admin, 127.0.0.1:9644.
type adminFlag struct {
	value string
	given func() bool
}

func (a *adminFlag) register(cmd *cobra.Command, environ []string, usage string) {
	a.value = defaultAdmin
	if v := envValue(environ, envAdmin); v != "" {
		a.value = v
	}
	fs := cmd.PersistentFlags()
	fs.StringVar(&a.value, "admin", a.value, usage+" (env "+envAdmin+")")
	a.given = func() bool { return envValue(environ, envAdmin) != "" || fs.Changed("admin") }
}

// addrs returns the admin addresses, host:port, after s has been
// resolved: an address written https://host:port asks for HTTPS
// (s.adminHTTPS), http://host:port is host:port.
func (a *adminFlag) addrs(s *securityFlags) ([]string, error) {
	if err := s.resolve(); err != nil {
		return nil, usageError(err.Error())
	}
	list := a.value
	if !a.given() && s.profile != nil && s.profile.Admin != "" {
		list = string(s.profile.Admin)
	}
	var out []string
	for addr := range strings.SplitSeq(list, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(addr, "https://"); ok {
			addr, s.adminHTTPS = rest, true
		} else {
			addr = strings.TrimPrefix(addr, "http://")
		}
		out = append(out, strings.TrimSuffix(addr, "/"))
	}
	if len(out) == 0 {
		return nil, usageError("--admin is empty")
	}
	return out, nil
}

// profileView is a profile as profile list and show print it: the
// password hidden.
type profileView struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	profile
}

func newProfileView(name string, p *profile, current string) profileView {
	v := profileView{Name: name, Current: name == current, profile: *p}
	if p.SASL != nil && p.SASL.Password != "" {
		sasl := *p.SASL
		sasl.Password = "[hidden]"
		v.SASL = &sasl
	}
	return v
}

func newProfileCommand(environ []string, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "List, show, select, create and delete the profiles of " + configFileHelp,
		Long: "A profile names the brokers, the admin API, and the TLS and SASL settings of a\n" +
			"cluster, so that commands need no flags for them: --profile NAME (or\n" +
			envProfile + ") selects one, else the file's current one (skein profile use).\n" +
			"A flag or its environment variable (SKEIN_BROKERS, SKEIN_ADMIN, ...) wins over\n" +
			"the profile. The file is $XDG_CONFIG_HOME/skein/config.yaml, else\n" +
			configFileHelp + " (" + envConfigFile + " names another):\n\n" +
			"  current: local\n" +
			"  profiles:\n" +
			"    local:\n" +
			"      brokers: 127.0.0.1:9092\n" +
			"      admin: 127.0.0.1:9644\n" +
			"    prod:\n" +
			"      brokers: a:9093,b:9093\n" +
			"      admin: https://a:9644\n" +
			"      tls: {ca: /etc/skein/ca.pem, cert: me.pem, key: me-key.pem, insecure_skip_verify: false}\n" +
			"      sasl: {mechanism: SCRAM-SHA-512, user: alice, password_env: PROD_PASSWORD}\n\n" +
			"The password is password (in the file), password_env (an environment variable)\n" +
			"or password_file. skein writes the file with mode 0600, and without comments.",
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newProfileListCommand(environ, stdout), newProfileShowCommand(environ, stdout),
		newProfileUseCommand(environ, stdout), newProfileCreateCommand(environ, stdout), newProfileDeleteCommand(environ, stdout))
	return cmd
}

// readProfilesCmd reads the config file for a profile command: a file
// that does not parse is the command line's mistake (exit 2).
func readProfilesCmd(environ []string) (string, profileFile, error) {
	path := profilesPath(environ)
	pf, _, err := readProfiles(path)
	if err != nil {
		return path, pf, usageError(err.Error())
	}
	return path, pf, nil
}

// existing returns the profile name names, or a usage error saying which
// there are.
func (pf profileFile) existing(path, name string) (*profile, error) {
	p, ok := pf.Profiles[name]
	if !ok {
		return nil, usageError(fmt.Sprintf("profile %q is not in %s (%s)", name, path, pf.names()))
	}
	return p, nil
}

func newProfileListCommand(environ []string, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the profiles, the current one marked *",
		Args:  cobra.NoArgs,
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(*cobra.Command, []string) error {
		_, pf, err := readProfilesCmd(environ)
		if err != nil {
			return err
		}
		views := []profileView{}
		for _, name := range slices.Sorted(maps.Keys(pf.Profiles)) {
			views = append(views, newProfileView(name, pf.Profiles[name], pf.Current))
		}
		return out.write(stdout, views, func() error {
			rows := [][]string{{"NAME", "CURRENT", "BROKERS", "ADMIN", "TLS", "SASL"}}
			for _, v := range views {
				current, tls, sasl := "", "", ""
				if v.Current {
					current = "*"
				}
				if v.TLS != nil {
					tls = "yes"
				}
				if v.SASL != nil {
					sasl = strings.TrimSpace(v.SASL.Mechanism + " " + v.SASL.User)
				}
				rows = append(rows, []string{v.Name, current, string(v.Brokers), string(v.Admin), tls, sasl})
			}
			return printTable(stdout, rows)
		})
	}
	return cmd
}

func newProfileShowCommand(environ []string, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:               "show [NAME]",
		Short:             "Show a profile (the selected one by default), its password hidden",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeProfiles(environ),
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		path, pf, err := readProfilesCmd(environ)
		if err != nil {
			return err
		}
		name := profileName(cmd, environ)
		if len(args) == 1 {
			name = args[0]
		}
		if name == "" {
			name = pf.Current
		}
		if name == "" {
			return usageError(fmt.Sprintf("no profile selected: name one, or select one with --profile, %s or skein profile use (%s)", envProfile, path))
		}
		p, err := pf.existing(path, name)
		if err != nil {
			return err
		}
		v := newProfileView(name, p, pf.Current)
		return out.write(stdout, v, func() error { return outputYAML.write(stdout, v, nil) })
	}
	return cmd
}

func newProfileUseCommand(environ []string, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:               "use NAME",
		Short:             "Make a profile the current one, used when neither --profile nor " + envProfile + " names one",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeProfiles(environ),
		RunE: func(_ *cobra.Command, args []string) error {
			path, pf, err := readProfilesCmd(environ)
			if err != nil {
				return err
			}
			if _, err := pf.existing(path, args[0]); err != nil {
				return err
			}
			pf.Current = args[0]
			if err := writeProfiles(path, pf); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "using profile %s\n", args[0])
			return nil
		},
	}
}

func newProfileCreateCommand(environ []string, stdout io.Writer) *cobra.Command {
	var (
		p                         profile
		tlsOn, insecure           bool
		ca, cert, key             string
		mechanism, user           string
		passwordEnv, passwordFile string
	)
	cmd := &cobra.Command{
		Use:   "create NAME --brokers HOST:PORT,... [--admin HOST:PORT,...]",
		Short: "Create a profile and make it the current one",
		Long: "skein profile create writes a profile to " + configFileHelp + " and makes\n" +
			"it the current one, as rpk profile create does. The password is never a flag:\n" +
			"--password-env names the environment variable that will hold it, or\n" +
			"--password-file the file (or write password: into the file yourself).",
		Example: "  skein profile create local --brokers 127.0.0.1:9092 --admin 127.0.0.1:9644\n" +
			"  skein profile create prod --brokers a:9093,b:9093 --admin https://a:9644 \\\n" +
			"      --tls-ca /etc/skein/ca.pem --sasl-mechanism SCRAM-SHA-512 --user alice --password-env PROD_PASSWORD",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			name := args[0]
			if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == ':' }) {
				return usageError(fmt.Sprintf("profile name %q: no spaces, colons or control characters", name))
			}
			if p.Brokers == "" && p.Admin == "" {
				return usageError("profile create: give --brokers, --admin or both")
			}
			if tlsOn || insecure || ca != "" || cert != "" || key != "" {
				p.TLS = &profileTLS{CA: ca, Cert: cert, Key: key, InsecureSkipVerify: insecure}
			}
			if mechanism != "" || user != "" || passwordEnv != "" || passwordFile != "" {
				p.SASL = &profileSASL{Mechanism: strings.ToUpper(mechanism), User: user, PasswordEnv: passwordEnv, PasswordFile: passwordFile}
			}
			if err := p.check(); err != nil {
				return usageError(err.Error())
			}
			path, pf, err := readProfilesCmd(environ)
			if err != nil {
				return err
			}
			if _, ok := pf.Profiles[name]; ok {
				return usageError(fmt.Sprintf("profile %q is already in %s (skein profile delete %s first)", name, path, name))
			}
			if pf.Profiles == nil {
				pf.Profiles = map[string]*profile{}
			}
			pf.Profiles[name], pf.Current = &p, name
			if err := writeProfiles(path, pf); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "created profile %s in %s and made it the current one\n", name, path)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar((*string)(&p.Brokers), "brokers", "", "comma-separated seed brokers, host:port")
	fl.StringVar((*string)(&p.Admin), "admin", "", "comma-separated admin APIs, host:port or https://host:port")
	fl.BoolVar(&tlsOn, "tls", false, "connect with TLS (implied by the other --tls flags)")
	fl.StringVar(&ca, "tls-ca", "", "PEM file of the CAs the brokers' certificates chain to")
	fl.StringVar(&cert, "tls-cert", "", "PEM file of the client certificate")
	fl.StringVar(&key, "tls-key", "", "PEM file of the client certificate's key")
	fl.BoolVar(&insecure, "tls-insecure-skip-verify", false, "accept any broker certificate (test clusters only)")
	fl.StringVar(&mechanism, "sasl-mechanism", "", "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
	fl.StringVar(&user, "user", "", "SASL user")
	fl.StringVar(&passwordEnv, "password-env", "", "the environment variable that holds the password")
	fl.StringVar(&passwordFile, "password-file", "", "the file that holds the password")
	_ = cmd.RegisterFlagCompletionFunc("sasl-mechanism", completeValues("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"))
	return cmd
}

func newProfileDeleteCommand(environ []string, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:               "delete NAME",
		Short:             "Delete a profile (when it was the current one, no profile is current)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeProfiles(environ),
		RunE: func(_ *cobra.Command, args []string) error {
			path, pf, err := readProfilesCmd(environ)
			if err != nil {
				return err
			}
			if _, err := pf.existing(path, args[0]); err != nil {
				return err
			}
			delete(pf.Profiles, args[0])
			if pf.Current == args[0] {
				pf.Current = ""
			}
			if err := writeProfiles(path, pf); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "deleted profile %s\n", args[0])
			return nil
		},
	}
}
