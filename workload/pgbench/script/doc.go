// Package script parses pgbench script files (and pgbench's builtin
// scripts) into commands, as PostgreSQL 15's pgbench does.
//
// SQL commands end at a ';' outside quotes ('...', E'...', "...", $$...$$,
// $tag$...$tag$), comments (-- and nesting /* */), parentheses and CREATE
// FUNCTION ... BEGIN ATOMIC bodies; at a backslash that starts a
// meta-command (anywhere on a line: "SELECT ... \gset"); or at the end of
// the script. "\;" joins statements into one command. Variable references
// :name are found everywhere in the text, quotes and comments included, as
// pgbench does; each occurrence is a new parameter; "::" is skipped.
//
// Meta-commands: \set, \sleep, \if, \elif, \else, \endif, \gset, \aset,
// \startpipeline, \syncpipeline, \endpipeline (names in any case; a
// backslash at the end of a line continues the command). \shell and
// \setshell are refused: txload runs no shell commands.
//
// Beyond pgbench, which checks pipelines only while running, Parse rejects
// pipeline misuse that would fail whichever \if branches run.
package script
