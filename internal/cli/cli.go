package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/internal/runner"
	"github.com/txload/txload/pg"
	"github.com/txload/txload/workload"
)

// Env is what the commands may touch of the outside world.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// LookupEnv reads the environment libpq reads (PGHOST, PGPORT, ...):
	// pgx reads the process's own, so this must be os.LookupEnv but in
	// tests. nil: Getenv.
	LookupEnv func(string) (string, bool)
	// Stdin is `txload pgbench -f -`'s script (nil: none).
	Stdin    io.Reader
	Registry *workload.Registry
	Version  string
}

// Exit codes.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the run failed: cannot connect, a check found a violation
	ExitUsage       = 2 // bad usage, detected before the database is touched
	ExitInterrupted = 130
)

// ExitError carries the exit code an error maps to.
type ExitError struct {
	Code int
	Err  error
	// Printed says the error's lines are on stderr already (pgbench's
	// own): the caller prints nothing more.
	Printed bool
}

// Printed says err's lines were written on stderr already: print nothing.
func Printed(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee) && ee.Printed
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func usageErr(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

func usagef(format string, args ...any) error { return usageErr(fmt.Errorf(format, args...)) }

// ExitCode maps an error returned by Execute to the process exit code. An
// error cobra raised before any command ran (unknown flag, unknown command,
// a malformed value) is a usage error.
func ExitCode(err error, ran bool) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if !ran {
		return ExitUsage
	}
	return ExitFailed
}

// runErr maps the runner's errors to exit codes.
func runErr(err error) error {
	var ue *runner.UsageError
	var se *workload.SettingsError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ue):
		return usageErr(ue.Err)
	case errors.As(err, &se):
		// Tables that exist with other settings: nothing was written.
		return usageErr(err)
	case errors.Is(err, runner.ErrInterrupted):
		return &ExitError{Code: ExitInterrupted, Err: err}
	}
	return err
}

// stdoutErr is the error of a command whose own work succeeded but whose
// report could not be written to stdout (err): exit 1, or 130 for a closed
// pipe, which ends a command as an interrupt does.
func stdoutErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EPIPE):
		return &ExitError{Code: ExitInterrupted, Err: fmt.Errorf("interrupted: writing the report to stdout: %w", err)}
	}
	return fmt.Errorf("writing the report to stdout: %w", err)
}

// ErrorLine is the line that says err on stderr: "txload: " and its
// message, whose server's part may hold terminal escapes (pg.Printable).
func ErrorLine(err error) string {
	return "txload: " + pg.Printable(err.Error()) + "\n"
}

// Root builds the command tree. ran is set once a command's own code starts,
// so that errors before it map to exit code 2.
func Root(env Env, ran *bool) *cobra.Command {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	// The report on stdout is what a clean run or check says: a write of
	// it that failed (a full disk, a closed descriptor) fails the command.
	stdout := outfile.Watch(env.Stdout)
	env.Stdout = stdout
	root := &cobra.Command{
		Use:   "txload",
		Short: "A load generator for PostgreSQL-compatible databases",
		Long: `txload drives PostgreSQL, CockroachDB and YugabyteDB with workloads that
measure what an isolation level, a schema or a cluster costs and what it
lets through. With no --url (and no DATABASE_URL) it starts an embedded
PostgreSQL of its own and removes it on exit.`,
		Example: `  txload run bank --isolation rc,serializable --duration 10s
  txload run bank --url postgres://root@localhost:26257/defaultdb?sslmode=disable
  txload workloads`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			*ran = true
			// A stop signal ends a write to a stdout whose reader
			// stalls (a pipe, a terminal on hold), as it ends the rest.
			stdout.StopOn(cmd.Context())
		},
		PersistentPostRunE: func(*cobra.Command, []string) error {
			return stdoutErr(stdout.Err())
		},
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	root.AddCommand(
		runCommand(env),
		initCommand(env),
		checkCommand(env),
		workloadsCommand(env),
		versionCommand(env),
		sweepCommand(env),
		mergeCommand(env),
		reportCommand(env),
		lagCommand(env),
		failoverCommand(env),
		pgbenchCommand(env),
	)
	for _, c := range root.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
	}
	return root
}

func workloadsCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:     "workloads",
		Short:   "List the workloads, one line each",
		Example: "  txload workloads",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			width := 0
			for _, m := range env.Registry.All() {
				width = max(width, len(m.Name))
			}
			for _, m := range env.Registry.All() {
				if _, err := fmt.Fprintf(env.Stdout, "%-*s  %s\n", width, m.Name, m.Description); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func versionCommand(env Env) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print txload's version",
		Example: "  txload version",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(env.Stdout, "txload %s\n", env.Version)
			return err
		},
	}
}

// workloadParent makes run, init and check answer an unknown or missing
// workload with a usage error naming the ones they know.
func workloadParent(env Env, cmd *cobra.Command) {
	cmd.FParseErrWhitelist = cobra.FParseErrWhitelist{UnknownFlags: true}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		var names []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.Hidden {
				names = append(names, sub.Name())
			}
		}
		if len(args) == 0 {
			return usagef("%s needs a workload (one of: %s)", c.CommandPath(), strings.Join(names, ", "))
		}
		return usagef("unknown workload %q for %s (known: %s)", args[0], c.CommandPath(), strings.Join(names, ", "))
	}
}

// leaf is what a verb does for one workload: its help, its flags, and the
// one call it makes.
type leaf struct {
	short, example string
	flags          func(*pflag.FlagSet)
	run            func(context.Context) error
}

// subcommands adds one child per workload, made from the leaf that make
// returns for a fresh generator each. A workload without the capability
// (has) gets a hidden child that says so in one line.
func subcommands(env Env, parent *cobra.Command, verb string, has func(workload.Hooks) bool,
	make func(workload.Meta, workload.Generator) leaf) {
	workloadParent(env, parent)
	var capable []string
	for _, m := range env.Registry.All() {
		if has(m.New().Hooks()) {
			capable = append(capable, m.Name)
		}
	}
	for _, m := range env.Registry.All() {
		g := m.New()
		h := g.Hooks()
		if !has(h) {
			parent.AddCommand(&cobra.Command{
				Use: m.Name, Hidden: true, DisableFlagParsing: true,
				RunE: func(*cobra.Command, []string) error {
					return usagef("workload %s has no %s (it has: %s; %s works for: %s)", m.Name, verb, runner.Capabilities(h), verb, strings.Join(capable, ", "))
				},
			})
			continue
		}
		l := make(m, g)
		c := &cobra.Command{Use: m.Name, Short: l.short, Example: l.example,
			RunE: func(cmd *cobra.Command, _ []string) error { return runErr(l.run(cmd.Context())) }}
		l.flags(c.Flags())
		// A flag given to other commands only (workload.OnlyFor) is
		// hidden here, and refused with one line if used.
		var foreign []*pflag.Flag
		g.Flags().VisitAll(func(f *pflag.Flag) {
			if !workload.FlagFor(f, verb) {
				f.Hidden = true
				foreign = append(foreign, f)
			}
			c.Flags().AddFlag(f)
		})
		if run := c.RunE; len(foreign) > 0 {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				for _, f := range foreign {
					if f.Changed {
						var of []string
						for _, v := range f.Annotations[workload.FlagVerbs] {
							of = append(of, cmd.Root().Name()+" "+v+" "+m.Name)
						}
						return usagef("--%s is not a flag of %s (only of %s)", f.Name, cmd.CommandPath(), strings.Join(of, " and "))
					}
				}
				return run(cmd, args)
			}
		}
		for name, v := range h.RunDefaults.Flags() {
			setDefault(c.Flags(), name, v)
		}
		// A flag the command takes but does not use (workload.IgnoredBy)
		// is said to be ignored, in one line.
		used := c.RunE
		c.RunE = func(cmd *cobra.Command, args []string) error {
			var ignored []string
			why := "it reads the settings init recorded in the database"
			g.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Changed && workload.FlagIgnored(f, verb) {
					ignored = append(ignored, "--"+f.Name)
					if w := f.Annotations[workload.FlagIgnoredWhy]; len(w) > 0 {
						why = w[0]
					}
				}
			})
			if len(ignored) > 0 {
				fmt.Fprintf(env.Stderr, "txload: %s ignores %s: %s\n", cmd.CommandPath(), strings.Join(ignored, ", "), why)
			}
			return used(cmd, args)
		}
		c.Args = cobra.NoArgs
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return flagError(err) })
		parent.AddCommand(c)
	}
}

// setDefault makes v the default of flag name, if fs has it: the
// workload's own defaults, and lag's, valid by construction.
func setDefault(fs *pflag.FlagSet, name, v string) {
	if fl := fs.Lookup(name); fl != nil {
		_ = fl.Value.Set(v)
		fl.DefValue = v
	}
}
