package cli

// skein completion bash|zsh|fish: cobra's completion scripts, which ask
// skein itself (its hidden __complete command) what completes a word, so
// that commands, flags and the values of flags such as -o and --profile
// complete as this binary knows them.

import (
	"io"

	"github.com/spf13/cobra"
)

func newCompletionCommand(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script for bash, zsh or fish",
		Long: "skein completion prints the script that makes your shell complete skein's\n" +
			"commands, flags and flag values (-o's formats, --profile's profiles). Load it\n" +
			"once to try it, or install it to have it in every new shell:\n\n" +
			"bash (needs the bash-completion package):\n" +
			"  source <(skein completion bash)                       # this shell\n" +
			"  skein completion bash > ~/.local/share/bash-completion/completions/skein\n" +
			"  skein completion bash | sudo tee /etc/bash_completion.d/skein   # every user\n\n" +
			"zsh (with compinit enabled: autoload -U compinit; compinit in ~/.zshrc):\n" +
			"  source <(skein completion zsh)                        # this shell\n" +
			"  skein completion zsh > \"${fpath[1]}/_skein\"            # then start a new shell\n\n" +
			"fish:\n" +
			"  skein completion fish | source                        # this shell\n" +
			"  skein completion fish > ~/.config/fish/completions/skein.fish",
		Args:                  cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		ValidArgs:             []string{"bash", "zsh", "fish"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(stdout, true)
			case "zsh":
				return root.GenZshCompletion(stdout)
			}
			return root.GenFishCompletion(stdout, true)
		},
	}
}

// completeValues completes a flag's value from a fixed list, never with
// file names.
func completeValues(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}
