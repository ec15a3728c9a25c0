// Package tpcc is TPC-C (revision 5.11): its nine tables loaded as clause
// 4.3 describes, the five transactions with the spec's inputs and mix
// (dealt per terminal from a deck of 23), the terminals' keying and think
// times, tpmC cross-checked against the server, and the twelve consistency
// conditions of clause 3.3.2 checked set-based in one snapshot.
package tpcc
