// Package interrupt turns the signals that stop a command (Ctrl-C,
// SIGTERM, SIGHUP, SIGQUIT, a closed output) into the cancellation of its
// context, the cause naming the signal.
package interrupt
