package pg

// ConnectMessage is a failed connection's error as txload shows it: one
// line that says each thing once (see connectDetail), with secrets (the
// passwords of the URL) scrubbed, for code that connects with pgx itself.
func ConnectMessage(err error, secrets []string) string {
	return connectDetail(Scrub(err.Error(), secrets))
}
