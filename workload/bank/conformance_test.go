package bank_test

import (
	"testing"

	"github.com/txload/txload/workload/bank"
	"github.com/txload/txload/workload/workloadtest"
)

// bank through every command (workloadtest.Run).
func TestConformance(t *testing.T) {
	workloadtest.Run(t, bank.Srv(), bank.Meta(), workloadtest.Config{Flags: []string{"--accounts", "1000"}})
}
