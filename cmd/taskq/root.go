package main

import (
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/pkg/client"
)

// newRoot builds the command tree of one invocation.
func (a *app) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "taskq",
		Short: "Inspect and drive taskq: idempotency keys, runs, tasks and events",
		Long: `taskq is the operator's view of a taskq deployment: which idempotency keys are
held and by which run, the runs themselves, the task definitions workers
registered, and the events ingested. It also evaluates key expressions offline,
serves the HTTP API, and runs a complete demo stack with one command.

Every command reads Redis from --redis (default $TASKQ_REDIS_URL, then
redis://127.0.0.1:6379/0) and works in --namespace (default $TASKQ_NAMESPACE,
then "default"). Tables are for people; -o json gives stable field names for
scripts.

` + exitCodesHelp(),
		Example: `  # the one-command demo: embedded Redis, HTTP API and an example worker
  taskq dev

  # which keys are held, and by which runs
  taskq keys ls --match 'order:*'

  # would this input be deduplicated, and under which key?
  taskq eval '"order:" + input.orderId' --input '{"orderId":"1001"}'`,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			switch a.output {
			case formatTable, formatJSON:
			default:
				return usageErrorf("invalid output format %q for -o/--output: use table or json", a.output)
			}
			if a.namespace == "" {
				return usageErrorf("--namespace must not be empty")
			}
			if !cmd.Flags().Changed("partitions") {
				if v := a.getenv(envPartitions); v != "" {
					n, err := strconv.Atoi(v)
					if err != nil {
						return usageErrorf("$%s %q is not a number", envPartitions, v)
					}
					a.partitions = n
				}
			}
			if a.partitions < 0 || a.partitions > client.PartitionsMax {
				return usageErrorf("--partitions %d: must be from 1 to %d, or 0 to adopt the namespace's", a.partitions, client.PartitionsMax)
			}
			return nil
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// pflag quotes strconv's own wording; the flag and value say enough.
		return usageErrorf("%s", strconvNoise.ReplaceAllString(err.Error(), ""))
	})

	pf := root.PersistentFlags()
	// The default is resolved when Redis is first needed, so --help never
	// prints a password from the environment.
	pf.StringVar(&a.redisURL, "redis", "", "Redis URL: "+client.RedisURLSchemes+" (default $"+envRedisURL+", then "+client.RedisURLDefault+")")
	pf.StringVar(&a.namespace, "namespace", a.envOr(envNamespace, "default"), "namespace of keys, runs, tasks and events (env "+envNamespace+")")
	pf.IntVar(&a.partitions, "partitions", 0, "partition count of the namespace: 0 adopts the one it recorded when first used, "+
		"else it must be that one (env "+envPartitions+"; see docs/scaling.md)")
	pf.StringVarP(&a.output, "output", "o", formatTable, "output format: table or json")
	pf.BoolVar(&a.noColor, "no-color", false, "no colours, even on a terminal (env "+envNoColor+")")
	pf.BoolVar(&a.allowEvicting, "allow-evicting-redis", false,
		"work on a Redis whose maxmemory-policy may evict keys (not noeviction), with a warning: duplicates may run again and runs may vanish")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{formatTable, formatJSON}, cobra.ShellCompDirectiveNoFileComp))

	root.AddCommand(
		a.keysCmd(), a.runsCmd(), a.tasksCmd(), a.eventsCmd(), a.evalCmd(),
		a.serveCmd(), a.devCmd(), a.completionCmd(), a.versionCmd(),
	)
	root.AddCommand(a.workersCmd())
	root.AddCommand(a.suppressedCmd())
	root.AddCommand(a.rateLimitsCmd())
	root.AddCommand(a.schedulesCmd())
	root.SetHelpCommand(a.helpCmd(root))
	// --version prints what `taskq version` prints.
	root.Version = a.version.Version
	root.SetVersionTemplate(strings.ReplaceAll(a.versionLine(), "{", "{{`{`}}") + "\n")
	return root
}

// strconvNoise matches the parser detail pflag appends to a bad value.
var strconvNoise = regexp.MustCompile(`strconv\.\w+: parsing "[^"]*": `)

// versionCmd prints the build's version.
func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of taskq",
		Example: `  taskq version
  taskq version -o json`,
		Args: argNames(nil),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			p := a.printer()
			if p.json() {
				return p.JSON(struct {
					buildVersion
					Go       string `json:"go"`
					Platform string `json:"platform"`
				}{a.version, runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH})
			}
			_, err := fmt.Fprintln(a.stdout, a.versionLine())
			return err
		}),
	}
}

// versionLine is what `taskq version` and `taskq --version` print: the
// version, the Go release and platform, and the commit the binary was built
// from when Go recorded it.
func (a *app) versionLine() string {
	v := a.version
	line := fmt.Sprintf("taskq %s (%s, %s/%s", v.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if v.Revision != "" {
		line += ", commit " + shortRevision(v.Revision)
		if v.Time != "" {
			line += " of " + v.Time
		}
		if v.Modified {
			line += ", modified"
		}
	}
	return line + ")"
}

// completionCmd writes shell completion scripts.
func (a *app) completionCmd() *cobra.Command {
	shells := []string{"bash", "zsh", "fish", "powershell"}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print the completion script for a shell. Task names, run statuses and output
formats complete as well as commands and flags.`,
		Example: `  # bash, this session
  source <(taskq completion bash)
  # bash, every session (Linux)
  taskq completion bash > /etc/bash_completion.d/taskq
  # zsh
  taskq completion zsh > "${fpath[1]}/_taskq"
  # fish
  taskq completion fish > ~/.config/fish/completions/taskq.fish`,
		ValidArgs: shells,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := argNames([]string{"SHELL"})(cmd, args); err != nil {
				return err
			}
			for _, s := range shells {
				if args[0] == s {
					return nil
				}
			}
			return usageErrorf("unsupported shell %q: use bash, zsh, fish or powershell", args[0])
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(a.stdout, true)
			case "zsh":
				return root.GenZshCompletion(a.stdout)
			case "fish":
				return root.GenFishCompletion(a.stdout, true)
			default:
				return root.GenPowerShellCompletionWithDesc(a.stdout)
			}
		}),
	}
}

// helpCmd replaces cobra's help command so that it too has examples and
// names an unknown topic as a usage error.
func (a *app) helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Example: `  taskq help keys
  taskq help keys release`,
		RunE: func(cmd *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return usageErrorf("unknown help topic %v", args)
			}
			return target.Help()
		},
	}
}
