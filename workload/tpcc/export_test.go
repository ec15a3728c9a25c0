package tpcc

import "github.com/txload/txload/internal/pgtest"

// Srv is the package's test server, for its external tests.
func Srv() *pgtest.Server { return srv }
