// Command txload is a load generator for PostgreSQL-compatible databases.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/txload/txload/internal/cli"
	"github.com/txload/txload/internal/interrupt"
	"github.com/txload/txload/internal/outfile"
	"github.com/txload/txload/workload/all"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := interrupt.Context(context.Background())
	defer stop()
	ran := false
	// Diagnostics: a stop signal is not held by a reader of stderr that
	// takes nothing (2>&1 | less, not scrolled).
	stderr := outfile.Watch(os.Stderr).Diagnostics(ctx)
	root := cli.Root(cli.Env{
		Stdout: os.Stdout, Stderr: stderr, Getenv: os.Getenv, LookupEnv: os.LookupEnv, Stdin: os.Stdin,
		Registry: all.Registry(), Version: buildVersion(),
	}, &ran)
	err := root.ExecuteContext(ctx)
	code := cli.ExitCode(err, ran)
	if err != nil && ctx.Err() != nil && code == cli.ExitFailed {
		// A stop signal cut short what failed: starting the embedded
		// server, loading data (whose error may be only the connection
		// the cancellation closed).
		// Its line says so, whatever the error was: a connection closed,
		// or a statement cancelled ("context canceled", which says nothing
		// to the user); the embedded server's own error says "interrupted".
		code = cli.ExitInterrupted
		if !strings.Contains(err.Error(), "interrupted") {
			err = fmt.Errorf("interrupted: %w", err)
		}
	}
	if err != nil && !cli.Printed(err) {
		fmt.Fprint(stderr, cli.ErrorLine(err))
	}
	return code
}

func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	v := "dev"
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}
