// Package pg connects txload to PostgreSQL-compatible servers: one or more
// URLs used round-robin, dialect detection, isolation levels, SQLSTATE
// classification and password redaction.
package pg
