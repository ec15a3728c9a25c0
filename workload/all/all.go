// Package all assembles the registry of every workload txload ships. The
// registry is built on demand rather than filled by init functions, so no
// package holds mutable global state.
package all

import (
	"github.com/txload/txload/workload"
	appendwl "github.com/txload/txload/workload/append"
	"github.com/txload/txload/workload/bank"
	"github.com/txload/txload/workload/pgbench"
	"github.com/txload/txload/workload/pgio"
	"github.com/txload/txload/workload/tpcc"
	"github.com/txload/txload/workload/vote"
	"github.com/txload/txload/workload/ycsb"
)

// Registry returns every workload.
func Registry() *workload.Registry {
	r, err := workload.NewRegistry(append([]workload.Meta{appendwl.Meta(), bank.Meta(), vote.Meta(), pgio.Meta(), ycsb.Meta(), tpcc.Meta()}, pgbench.Metas()...)...)
	if err != nil {
		panic(err) // duplicate names are a programming error caught by every test
	}
	return r
}
