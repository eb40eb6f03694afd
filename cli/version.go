package cli

// skein --version and skein version: which build this is.

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version and commit are set at link time by the Makefile's build
// (-ldflags "-X github.com/skeinlog/skein/cli.version=$(VERSION)", VERSION
// from git describe --tags --always --dirty); a packager may set commit
// too. Empty, as with a plain go build or go install, they come from the
// build information the go command records (buildInfo).
var (
	version string
	commit  string
)

// buildVersion is what --version and `skein version` show.
type buildVersion struct {
	Version string `json:"version"`
	// Commit is the revision built from; Modified, that its work tree
	// had uncommitted changes.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// buildInfo returns this binary's version: the link-time values first,
// then the main module's version (v1.2.3 from go install ...@v1.2.3, a
// pseudo-version from go build in a checkout) and the vcs.revision and
// vcs.modified settings of debug.ReadBuildInfo.
func buildInfo() buildVersion {
	v := buildVersion{Version: version, Commit: commit, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	// git describe --dirty's mark, when the Makefile set the version.
	v.Modified = strings.HasSuffix(v.Version, "-dirty")
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if v.Version == "" {
			v.Version = "dev"
		}
		return v
	}
	if v.Version == "" {
		v.Version = bi.Main.Version
	}
	if v.Version == "" || v.Version == "(devel)" {
		v.Version = "dev"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if v.Commit == "" {
				v.Commit = s.Value
			}
		case "vcs.modified":
			v.Modified = v.Modified || s.Value == "true"
		}
	}
	return v
}

// text is the version as --version prints it:
//
//	skein v0.3.0-12-g1a2b3c4-dirty
//	commit  1a2b3c4d5e6f... (modified)
//	go      go1.26.0 linux/amd64
func (v buildVersion) text() string {
	s := "skein " + v.Version + "\n"
	if v.Commit != "" {
		s += "commit  " + v.Commit
		if v.Modified {
			s += " (modified)"
		}
		s += "\n"
	}
	return s + fmt.Sprintf("go      %s %s/%s\n", v.Go, v.OS, v.Arch)
}

func newVersionCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show skein's version, the commit it was built from and the Go version",
		Long: "skein version shows the version of this binary (git describe of the checkout\n" +
			"make built it from, or the module version go install fetched), the commit,\n" +
			"with (modified) when its work tree had uncommitted changes, and the Go version\n" +
			"and platform it was built with. skein --version prints the same.",
		Args: cobra.NoArgs,
	}
	out := addOutputFlag(cmd)
	cmd.RunE = func(*cobra.Command, []string) error {
		v := buildInfo()
		return out.write(stdout, v, func() error {
			_, err := io.WriteString(stdout, v.text())
			return err
		})
	}
	return cmd
}
