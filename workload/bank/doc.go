// Package bank is the bank-transfer workload: transfers between accounts at a
// chosen isolation level, each writing a ledger row and bumping per-account
// versions in the same transaction, so that a check counts lost updates,
// money drift and negative balances exactly.
package bank
