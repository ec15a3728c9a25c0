// Package vote is Noria's vote benchmark: articles and their votes, read far
// more often than written, with the vote counts computed three ways — a join
// over the vote rows, a counter column kept by each vote's transaction, or a
// materialized view refreshed in the background — so that the cost of each,
// and the staleness of the view, can be compared.
package vote
