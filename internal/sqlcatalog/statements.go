package sqlcatalog

import (
	"fmt"
	"slices"
	"strings"
)

// SHOW and DESCRIBE. SQLite has neither, so they are recognised here, by
// their leading keywords, with the tokenizer below (keywords, identifiers
// bare or quoted with "", `` or [], dots, one optional ';', comments and
// white space), and answered as a SELECT over the views with the names
// bound as parameters:
//
//	SHOW TABLES                      table_catalog, table_schema, table_name, table_type
//	SHOW SCHEMAS | SHOW DATABASES    catalog_name, schema_name
//	SHOW COLUMNS {FROM | IN} t       table_catalog, table_schema, table_name, column_name, data_type, is_nullable
//	{DESCRIBE | DESC} t              column_name, data_type, is_nullable
//
// (the columns DataFusion answers them with, which the Metabase and
// SQLAlchemy Flight SQL drivers read). t is table, namespace.table or
// tenant.namespace.table; a bare table name must be in one namespace only.
// Any other statement is SQLite's to parse.

// token is one token of a SHOW or DESCRIBE statement.
type token struct {
	kind byte // 'w' word, 'q' quoted identifier, '.', ';', 0 end, '?' anything else
	text string
	pos  int
}

// lexer reads tokens of s.
type lexer struct {
	s   string
	pos int
}

func (l *lexer) skip() error {
	for l.pos < len(l.s) {
		switch c := l.s[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case strings.HasPrefix(l.s[l.pos:], "--"):
			if i := strings.IndexByte(l.s[l.pos:], '\n'); i >= 0 {
				l.pos += i + 1
			} else {
				l.pos = len(l.s)
			}
		case strings.HasPrefix(l.s[l.pos:], "/*"):
			i := strings.Index(l.s[l.pos+2:], "*/")
			if i < 0 {
				return &Error{Kind: ErrInvalid, Msg: "sql: unterminated comment", Offset: l.pos}
			}
			l.pos += i + 4
		default:
			return nil
		}
	}
	return nil
}

func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (l *lexer) next() (token, error) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	start := l.pos
	if l.pos >= len(l.s) {
		return token{kind: 0, pos: start}, nil
	}
	c := l.s[l.pos]
	switch {
	case c == '.' || c == ';':
		l.pos++
		return token{kind: c, text: string(c), pos: start}, nil
	case c == '"' || c == '`' || c == '[':
		closer := c
		if c == '[' {
			closer = ']'
		}
		var b strings.Builder
		for i := l.pos + 1; i < len(l.s); i++ {
			if l.s[i] != closer {
				b.WriteByte(l.s[i])
				continue
			}
			if closer != ']' && i+1 < len(l.s) && l.s[i+1] == closer {
				b.WriteByte(closer)
				i++
				continue
			}
			l.pos = i + 1
			return token{kind: 'q', text: b.String(), pos: start}, nil
		}
		return token{}, &Error{Kind: ErrInvalid, Msg: "sql: unterminated quoted identifier", Offset: start}
	case identByte(c):
		for l.pos < len(l.s) && identByte(l.s[l.pos]) {
			l.pos++
		}
		return token{kind: 'w', text: l.s[start:l.pos], pos: start}, nil
	default:
		l.pos++
		return token{kind: '?', text: string(c), pos: start}, nil
	}
}

func (t token) is(word string) bool { return t.kind == 'w' && strings.EqualFold(t.text, word) }

// unexpected is the error for a token where another was expected.
func unexpected(t token, want string) *Error {
	got := fmt.Sprintf("%q", t.text)
	if t.kind == 0 {
		got = "the end"
	}
	return &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("sql: expected %s, found %s", want, got), Offset: t.pos}
}

const (
	showTables  = "SELECT table_catalog, table_schema, table_name, table_type FROM information_schema.tables ORDER BY table_schema, table_name"
	showSchemas = "SELECT catalog_name, schema_name FROM information_schema.schemata ORDER BY schema_name"
	showColumns = "SELECT table_catalog, table_schema, table_name, column_name, data_type, is_nullable FROM information_schema.columns " +
		"WHERE table_schema = ?1 AND table_name = ?2 ORDER BY ordinal_position"
	describe = "SELECT column_name, data_type, is_nullable FROM information_schema.columns " +
		"WHERE table_schema = ?1 AND table_name = ?2 ORDER BY ordinal_position"
)

// rewrite returns the SELECT answering a SHOW or DESCRIBE statement, with
// its arguments, or text unchanged when it is neither. tables indexes the
// tenant's registrations (Engine.tables).
func rewrite(text, tenant string, tables map[string][]string) (string, []any, error) {
	l := &lexer{s: text}
	first, err := l.next()
	if err != nil {
		return "", nil, err
	}
	var query string
	var withName bool
	switch {
	case first.is("show"):
		t, err := l.next()
		if err != nil {
			return "", nil, err
		}
		switch {
		case t.is("tables"):
			query = showTables
		case t.is("schemas") || t.is("databases"):
			query = showSchemas
		case t.is("columns") || t.is("fields"):
			from, err := l.next()
			if err != nil {
				return "", nil, err
			}
			if !from.is("from") && !from.is("in") {
				return "", nil, unexpected(from, "FROM")
			}
			query, withName = showColumns, true
		default:
			return "", nil, unexpected(t, "TABLES, SCHEMAS or COLUMNS after SHOW")
		}
	case first.is("describe") || first.is("desc"):
		query, withName = describe, true
	default:
		return text, nil, nil
	}
	var args []any
	if withName {
		ns, name, err := tableName(l, tenant, tables)
		if err != nil {
			return "", nil, err
		}
		args = []any{ns, name}
	}
	end, err := l.next()
	if err == nil && end.kind == ';' {
		end, err = l.next()
	}
	if err != nil {
		return "", nil, err
	}
	if end.kind != 0 {
		return "", nil, unexpected(end, "the end of the statement")
	}
	return query, args, nil
}

// tableName reads a table name (1 to 3 parts) and resolves it to one of
// the tenant's registrations.
func tableName(l *lexer, tenant string, tables map[string][]string) (ns, name string, err error) {
	var parts []string
	var at int
	for {
		t, err := l.next()
		if err != nil {
			return "", "", err
		}
		if t.kind != 'w' && t.kind != 'q' {
			return "", "", unexpected(t, "a table name")
		}
		if len(parts) == 0 {
			at = t.pos
		}
		parts = append(parts, t.text)
		save := l.pos
		dot, err := l.next()
		if err != nil {
			return "", "", err
		}
		if dot.kind != '.' {
			l.pos = save
			break
		}
		if len(parts) == 3 {
			return "", "", &Error{Kind: ErrInvalid, Msg: "sql: a table name has at most three parts (tenant.namespace.table)", Offset: dot.pos}
		}
	}
	written := strings.Join(parts, ".")
	if len(parts) == 3 {
		if parts[0] != tenant {
			return "", "", &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("sql: no such table: %s", written), Offset: at}
		}
		parts = parts[1:]
	}
	name = parts[len(parts)-1]
	var candidates []string // "namespace\x00name"
	for _, exact := range []bool{true, false} {
		for _, r := range tables[strings.ToLower(name)] {
			rns, rname, _ := strings.Cut(r, "\x00")
			if exact && rname != name || !exact && !strings.EqualFold(rname, name) {
				continue
			}
			if len(parts) == 2 && (exact && rns != parts[0] || !exact && !strings.EqualFold(rns, parts[0])) {
				continue
			}
			candidates = append(candidates, r)
		}
		if len(candidates) > 0 {
			break
		}
	}
	switch len(candidates) {
	case 0:
		return "", "", &Error{Kind: ErrInvalid, Msg: fmt.Sprintf("sql: no such table: %s", written), Offset: at}
	case 1:
		ns, name, _ = strings.Cut(candidates[0], "\x00")
		return ns, name, nil
	default:
		var where []string
		for _, c := range candidates {
			cns, cname, _ := strings.Cut(c, "\x00")
			where = append(where, cns+"."+cname)
		}
		slices.Sort(where)
		return "", "", &Error{Kind: ErrInvalid, Offset: at,
			Msg: fmt.Sprintf("sql: table name %s is ambiguous: it names %s; qualify it with its namespace", written, strings.Join(where, ", "))}
	}
}
