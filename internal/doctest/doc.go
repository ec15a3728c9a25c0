// Package doctest runs the command samples of Markdown pages as tests, in
// the manner of cram and Go's testscript: a page's commands and their output
// are one text, compared with what the commands print once numbers, times
// and paths are masked, and rewritten from a real run by one command.
//
// A fenced block is a sample when an HTML comment right above it says so:
//
//	<!-- sample: run [option=value ...] -->
//	```
//	$ txload check history serial.jsonl
//	history: 4 transactions ...
//	```
//
// Lines beginning with "$ " are commands, run one after another by bash in
// the page's working directory; the lines up to the next command are what
// it prints (stdout and stderr together, in the order written). A line
// "..." stands for any number of lines. Options:
//
//	cmd="..."      the block holds output only, of this command
//	show="RE"      when rewritten, only lines matching RE are kept (gaps become "...")
//	elide="RE"     when rewritten, runs of more than 3 lines matching RE keep their first two and last
//	vary="RE"      lines matching RE are left out on both sides before comparing
//	setup="..."    a command run before the block's, its output not compared
//	copy="a b"     files of the repository copied into the working directory first
//	long           run only when TXLOAD_TEST_LONG=1
//	needs="a b"    programs that must be on PATH, else the block is skipped
//
// A block that is a file the samples use:
//
//	<!-- sample: file NAME -->
//
// and a block that is not run, with why and when it was made:
//
//	<!-- sample: not run: needs a pg_auto_failover formation; made 2026-11-27 with txload 63fbdd6 -->
//
// A block of text that reads as txload's output (Block.LooksLikeOutput: a
// report, progress or check line, an error line, a history's figures) is a
// sample too, even with no "$ " line: it runs (cmd="...") or is marked not
// run, with when it was made. Other blocks say what they are by their
// language tag (text, sql, json, ...).
//
// A page's settings, in a comment of its own anywhere on the page:
//
//	<!-- samples: server=own databases="bench ascii:SQL_ASCII" -->
package doctest
