package pg

// PassfileWarning is libpq's warning about the password file a connection
// to url would read (its passfile, else PGPASSFILE, else ~/.pgpass) when
// libpq would ignore that file: not a plain file, or open to its group or
// to others (`WARNING: password file "…" has group or world access;
// permissions should be u=rw (0600) or less`). It is "" when the file is
// fine or absent, and when the password comes from elsewhere (the URL,
// PGPASSWORD, a service). pgx reads the file whatever its mode: a target
// given the warning must not use the password it found there
// (IgnorePassfile).
func PassfileWarning(url string, env LookupEnv) string {
	settings, err := parseConnInfo(url)
	if err != nil || settings["password"] != "" || lookup(env, "PGPASSWORD") != "" ||
		settings["service"] != "" || lookup(env, "PGSERVICE") != "" {
		return ""
	}
	_, w := passfile(settings, env)
	return w
}

// IgnorePassfile drops the password pgx read for node i from its password
// file, which PassfileWarning said libpq would ignore.
func (t *Target) IgnorePassfile(i int) { t.configs[i].Password = "" }
