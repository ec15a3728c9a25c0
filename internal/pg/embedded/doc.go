// Package embedded starts a real, throwaway PostgreSQL server from binaries fetched once from Maven Central.
//
// The binaries are the zonky "embedded-postgres-binaries" artifacts, cached
// per version and platform (see Options.CacheDir). Each Server gets its own
// temporary data directory, listens only on 127.0.0.1 with trust
// authentication, and is tuned for load testing rather than durability: fsync,
// synchronous_commit and full_page_writes are off, so a crash loses data.
// Never point it at data you care about.
package embedded
