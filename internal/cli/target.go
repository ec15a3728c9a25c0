package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/txload/txload/internal/pg"
	"github.com/txload/txload/internal/pg/embedded"
)

// targetFlags choose the database: --url (repeatable), DATABASE_URL, or an
// embedded server.
type targetFlags struct {
	urls            []string
	embeddedVersion string
}

func (f *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.urls, "url", nil, "database URL; repeat for the nodes of a cluster (connections go round-robin). Default: $DATABASE_URL, else an embedded PostgreSQL")
	fs.StringVar(&f.embeddedVersion, "embedded-version", embedded.DefaultMajor(), "PostgreSQL major version of the embedded server")
}

// resolved is a validated choice of target, not yet connected.
type resolved struct {
	target   *pg.Target // the URLs, parsed; nil for the embedded server
	embedded *embedded.Version
}

func (f *targetFlags) resolve(env Env) (resolved, error) {
	urls := f.urls
	if len(urls) == 0 {
		if u := env.Getenv("DATABASE_URL"); u != "" {
			urls = []string{u}
		}
	}
	if len(urls) > 0 {
		t, err := pg.NewTarget(urls)
		if err != nil {
			return resolved{}, usageErr(err)
		}
		return resolved{target: t}, nil
	}
	v, err := embedded.Lookup(f.embeddedVersion)
	if err != nil {
		return resolved{}, usagef("--embedded-version: %v", err)
	}
	return resolved{embedded: &v}, nil
}

// connected is an open target; close stops the embedded server, if any.
type connected struct {
	target *pg.Target
	server pg.Server
	close  func()
}

// open starts the embedded server if needed, connects once and identifies
// the server. Progress goes to log.
func (r resolved) open(ctx context.Context, log io.Writer) (*connected, error) {
	c := &connected{close: func() {}, target: r.target}
	where := ""
	if r.embedded != nil {
		srv, err := embedded.Start(ctx, embedded.Options{Major: r.embedded.Major, Log: log})
		if err != nil {
			return nil, fmt.Errorf("starting the embedded PostgreSQL: %w", err)
		}
		c.close = func() {
			if err := srv.Stop(); err != nil {
				fmt.Fprintf(log, "stopping the embedded PostgreSQL: %v\n", err)
			}
		}
		where = " (embedded)"
		if c.target, err = pg.NewTarget([]string{srv.URL()}); err != nil {
			c.close()
			return nil, err
		}
	}
	t := c.target
	conn, err := t.ConnectNode(ctx, 0)
	if err != nil {
		c.close()
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if c.server, err = pg.Detect(ctx, conn); err != nil {
		c.close()
		return nil, err
	}
	if where == "" {
		where = " at " + t.URLs()[0]
		if t.Nodes() > 1 {
			where += fmt.Sprintf(" and %d more nodes", t.Nodes()-1)
		}
	}
	fmt.Fprintf(log, "server: %s%s\n", c.server, where)
	return c, nil
}
