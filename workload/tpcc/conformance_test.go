package tpcc_test

import (
	"testing"

	"github.com/txload/txload/workload/tpcc"
	"github.com/txload/txload/workload/workloadtest"
)

// tpcc through every command (workloadtest.Run), on one warehouse.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a TPC-C warehouse")
	}
	workloadtest.Run(t, tpcc.Srv(), tpcc.Meta(), workloadtest.Config{})
}
