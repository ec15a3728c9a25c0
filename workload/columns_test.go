package workload

import (
	"slices"
	"testing"
)

func TestColumnsOf(t *testing.T) {
	ddl := `CREATE TABLE a (
	id      INT PRIMARY KEY, -- a comment, with a comma
	price   NUMERIC(5, 2) NOT NULL,
	name    VARCHAR(16) NOT NULL DEFAULT '',
	code    CHAR NOT NULL,
	at      TIMESTAMP,
	PRIMARY KEY (id)
);
CREATE SEQUENCE s;
create table if not exists b(x bigint not null,y timestamptz) with (fillfactor=100)`
	want := []Column{{"a", "id", "integer"}, {"a", "price", "numeric(5, 2)"}, {"a", "name", "character varying(16)"},
		{"a", "code", "character(1)"}, {"a", "at", "timestamp without time zone"},
		{"b", "x", "bigint"}, {"b", "y", "timestamp with time zone"}}
	if got := ColumnsOf(ddl); !slices.Equal(got, want) {
		t.Errorf("ColumnsOf:\n got %v\nwant %v", got, want)
	}
}

func TestColumnViolations(t *testing.T) {
	want := []Column{{"a", "id", "integer"}, {"a", "bal", "numeric(12, 2)"}, {"a", "f*", "text"}, {"b", "x", "integer"}}
	for _, c := range []struct {
		name  string
		found []FoundColumn
		want  []string
	}{
		{"as made", []FoundColumn{{Column: Column{"a", "id", "integer"}}, {Column: Column{"a", "bal", "numeric(12, 2)"}},
			{Column: Column{"a", "f0", "text"}}, {Column: Column{"a", "f1", "text"}}}, nil},
		{"an integer widened", []FoundColumn{{Column: Column{"a", "id", "bigint"}}, {Column: Column{"a", "bal", "numeric(12, 2)"}}}, nil},
		{"changed, missing, extra", []FoundColumn{{Column: Column{"a", "id", "numeric"}}, {Column: Column{"a", "f1", "double precision"}},
			{Column: Column{"a", "g", "text"}}, {Column: Column{"a", "fx", "text"}}}, []string{
			"column a.bal is missing, where init makes it numeric(12, 2)",
			"column a.id is numeric, where init makes it integer",
			"column a.f1 is double precision, where init makes it text",
			"column a.g (text) is one init does not make",
			"column a.fx (text) is one init does not make"}},
		{"a collation", []FoundColumn{{Column: Column{"a", "id", "integer"}}, {Column: Column{"a", "bal", "numeric(12, 2)"}},
			{Column: Column{"a", "f0", "text"}, Collation: "ci"}},
			[]string{"column a.f0 has the collation ci, where init makes it with its type's default"}},
		{"a scale changed", []FoundColumn{{Column: Column{"a", "id", "integer"}}, {Column: Column{"a", "bal", "numeric(12, 4)"}}},
			[]string{"column a.bal is numeric(12, 4), where init makes it numeric(12, 2)"}},
	} {
		if got := ColumnViolations(want, c.found); !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
