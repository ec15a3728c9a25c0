package pg

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// showEncoding reads the session's client_encoding over the raw protocol.
func showEncoding(t *testing.T, pc *pgconn.PgConn) string {
	t.Helper()
	res, err := pc.Exec(testCtx(t), "SHOW client_encoding").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return string(res[0].Rows[0][0])
}

// On a database of any encoding, txload's own connections (pgx, whose
// simple protocol refuses any client_encoding but UTF8) work and speak
// UTF8, converted by the server; the workload's connections (ConnectRaw,
// the driver's) keep the database's encoding as libpq does, or the one the
// URL names.
func TestTargetAnyEncoding(t *testing.T) {
	for _, enc := range []string{"SQL_ASCII", "LATIN1", "UTF8"} {
		t.Run(enc, func(t *testing.T) {
			t.Parallel()
			db := srv.NewDatabaseEncoding(t, enc)
			tg, err := NewTarget([]string{db})
			if err != nil {
				t.Fatal(err)
			}
			conn, err := tg.Connect(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(testCtx(t))
			var dbEnc, clientEnc, e string
			if err := conn.QueryRow(testCtx(t), "SELECT pg_encoding_to_char(encoding), current_setting('client_encoding'), 'é' FROM pg_database WHERE datname = current_database()",
				pgx.QueryExecModeSimpleProtocol).Scan(&dbEnc, &clientEnc, &e); err != nil {
				t.Fatalf("a simple-protocol query on a %s database: %v", enc, err)
			}
			if dbEnc != enc || clientEnc != "UTF8" {
				t.Errorf("database %s, client_encoding %s; want %s, UTF8", dbEnc, clientEnc, enc)
			}
			if e != "é" {
				t.Errorf("a non-ASCII literal came back as %q", e)
			}
			if _, err := Detect(testCtx(t), conn); err != nil {
				t.Errorf("identifying the server: %v", err)
			}

			pc, err := tg.ConnectRaw(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close(testCtx(t))
			if got := showEncoding(t, pc); got != enc {
				t.Errorf("the workload's connection speaks %s, want the database's %s (as libpq)", got, enc)
			}

			// A client_encoding in the URL is the workload's; txload's own
			// connections stay UTF8.
			u := parseURL(t, db)
			u.setQuery("client_encoding", "LATIN1")
			tg, err = NewTarget([]string{u.String()})
			if err != nil {
				t.Fatal(err)
			}
			pc2, err := tg.ConnectRaw(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			defer pc2.Close(testCtx(t))
			if got := showEncoding(t, pc2); got != "LATIN1" {
				t.Errorf("with client_encoding=LATIN1 in the URL the workload's connection speaks %s", got)
			}
			c2, err := tg.Connect(testCtx(t))
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close(testCtx(t))
			if err := c2.QueryRow(testCtx(t), "SHOW client_encoding", pgx.QueryExecModeSimpleProtocol).Scan(&clientEnc); err != nil || clientEnc != "UTF8" {
				t.Errorf("txload's own connection: %q, %v", clientEnc, err)
			}
		})
	}
}
