// Package replica connects two PostgreSQL servers with PostgreSQL's own
// replication, for measuring lag without a pipeline of one's own: logical
// replication (a publication on the source, a subscription on the
// destination) between any two servers txload can reach, or a streaming
// standby built from an embedded server by a base backup.
package replica
