// Package cli holds txload's commands. It is the only code that reads flags
// and the environment and writes to stdout and stderr; both are injected, so
// every command runs in tests as it does from a shell.
package cli
