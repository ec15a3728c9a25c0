-- A script using most of pgbench's script syntax.
\set nbranches 10 * \
  :scale
\SET id random(1, :nbranches)

/* a block comment; with a semicolon
   /* nested */ still comment */
SELECT bid, bbalance
  FROM pgbench_branches   -- trailing comment; not the end
  WHERE bid = :id
    AND bbalance::int > -1 \gset br_
SELECT ';', ":x", $$ ; \gset $$, $q$ :y ; $q$, E'\' ;' AS e;
SELECT 1 AS one \; SELECT 2 AS two \aset
\sleep 10 ms
\sleep :id us
\sleep 2
\if :br_bid = 1
  SELECT 'one';
\elif :br_bid = 2
  \if :id > 5
    SELECT 'two, big';
  \endif
\else
  SELECT 'other';
\endif
\startpipeline
SELECT 1;
\syncpipeline
SELECT 2;
\endpipeline
SELECT :id + 1
