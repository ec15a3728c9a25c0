// Command txload is a load generator for PostgreSQL-compatible databases.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/txload/txload/internal/cli"
	"github.com/txload/txload/workload/all"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C kills at once
	}()
	ran := false
	root := cli.Root(cli.Env{
		Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv,
		Registry: all.Registry(), Version: buildVersion(),
	}, &ran)
	err := root.ExecuteContext(ctx)
	code := cli.ExitCode(err, ran)
	if err != nil {
		fmt.Fprintf(os.Stderr, "txload: %v\n", err)
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
