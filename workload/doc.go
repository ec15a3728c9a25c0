// Package workload defines the contract every txload workload implements and
// the registry the commands look workloads up in.
//
// A workload is data plus plain functions: a Meta names it and makes a
// Generator; the Generator carries its flags and configuration; optional
// capabilities (Initer, Opser, Checker, Varianter) are small interfaces found
// by type assertion. A workload never imports the engine or the CLI.
package workload
