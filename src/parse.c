/*-------------------------------------------------------------------------
 *
 * parse.c
 *		The statement form (semantics §3.1): CREATE FLOW ... AS AUTO CDC INTO ...,
 *		APPLY CHANGES INTO ..., CREATE STREAMING TABLE, DROP FLOW.
 *
 * PostgreSQL has no parser hook, so these statements reach autocdc as text,
 * through DO LANGUAGE autocdc and autocdc.execute() (statement.c).  The text
 * is tokenized with PostgreSQL's own core scanner, so identifiers, quoting,
 * dollar quotes and comments behave exactly as in SQL, and parsed by
 * recursive descent into AutocdcStmt nodes.  Expressions are not parsed
 * here: their source text is kept (STRUCT( rewritten to ROW() and checked
 * by create_flow against the source.  A whole block is parsed before any
 * statement runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "parser/parser.h"
#include "parser/scanner.h"
#include "common/keywords.h"
#include "utils/builtins.h"

#include "compat.h"
#include "parse.h"

/* One token of the block. */
typedef struct Tok
{
	int			code;			/* core scanner token code, 0 at end */
	const char *word;			/* keyword or unquoted identifier, lower case */
	int			start;			/* byte offset in the block */
	int			end;			/* offset of the next token (or end) */
	int			len;			/* length of the token's own text (names) */
	bool		reserved;		/* a reserved keyword: not a name */
} Tok;

/* Parser state. */
typedef struct Parser
{
	const char *text;
	Tok		   *toks;
	int			ntoks;
	int			pos;
} Parser;

/* Clauses of CREATE FLOW, in their documented order. */
enum
{
	CL_NONE = 0,
	CL_IGNORE_NULLS,
	CL_DELETE,
	CL_TRUNCATE,
	CL_SEQUENCE,
	CL_SYSTEM_SEQUENCE,
	CL_COLUMNS,
	CL_STORED,
	CL_TRACK,
	CL_COLUMNS_TO_UPDATE
};

static const char *const clause_names[] = {
	"", "IGNORE NULL UPDATES", "APPLY AS DELETE WHEN", "APPLY AS TRUNCATE WHEN",
	"SEQUENCE BY", "SYSTEM SEQUENCE BY", "COLUMNS", "STORED AS", "TRACK HISTORY ON",
	"COLUMNS TO UPDATE"
};

/* Is a core scanner token code a keyword (as opposed to a literal or operator)? */
static bool
is_keyword_token(int code)
{
	switch (code)
	{
		case IDENT:
		case UIDENT:
		case FCONST:
		case SCONST:
		case USCONST:
		case BCONST:
		case XCONST:
		case Op:
		case ICONST:
		case PARAM:
		case TYPECAST:
		case DOT_DOT:
		case COLON_EQUALS:
		case EQUALS_GREATER:
		case LESS_EQUALS:
		case GREATER_EQUALS:
		case NOT_EQUALS:
			return false;
		default:
			return code >= 258;
	}
}

/*
 * Length of a token's own text, without the space and comments that follow
 * it: a quoted identifier up to its closing quote, a word while it has word
 * characters, anything else up to the first space or comment.
 */
static int
token_length(const char *t, int max)
{
	int			n = 0;

	if (max <= 0)
		return 0;
	if (t[0] == '"')
	{
		for (n = 1; n < max; n++)
			if (t[n] == '"')
			{
				if (n + 1 < max && t[n + 1] == '"')
					n++;
				else
					return n + 1;
			}
		return max;
	}
	if (isalpha((unsigned char) t[0]) || t[0] == '_' || IS_HIGHBIT_SET(t[0]))
	{
		while (n < max && (isalnum((unsigned char) t[n]) || t[n] == '_' || t[n] == '$' ||
						   IS_HIGHBIT_SET(t[n])))
			n++;
		return n;
	}
	while (n < max && !isspace((unsigned char) t[n]) &&
		   !(t[n] == '-' && n + 1 < max && t[n + 1] == '-') &&
		   !(t[n] == '/' && n + 1 < max && t[n + 1] == '*'))
		n++;
	return n > 0 ? n : 1;
}

/* Tokenize the block with the core scanner. */
static void
tokenize(Parser *p)
{
	core_yy_extra_type yyextra;
	core_yyscan_t scanner;
	core_YYSTYPE yylval;
	YYLTYPE		yylloc;
	int			max = 64;
	int			i;

	p->toks = palloc(sizeof(Tok) * max);
	p->ntoks = 0;
	scanner = scanner_init(p->text, &yyextra, &ScanKeywords, ScanKeywordTokens);
	for (;;)
	{
		int			code = core_yylex(&yylval, &yylloc, scanner);
		Tok		   *t;

		if (p->ntoks + 1 >= max)
		{
			max *= 2;
			p->toks = repalloc(p->toks, sizeof(Tok) * max);
		}
		t = &p->toks[p->ntoks];
		t->code = code;
		t->start = code == 0 ? (int) strlen(p->text) : yylloc;
		t->word = NULL;
		if (code == IDENT && p->text[yylloc] != '"')
			t->word = pstrdup(yylval.str);	/* unquoted: already lower case */
		else if (is_keyword_token(code))
			t->word = pstrdup(yylval.keyword);
		p->ntoks++;
		if (code == 0)
			break;
	}
	scanner_finish(scanner);
	for (i = 0; i < p->ntoks; i++)
	{
		Tok		   *t = &p->toks[i];

		t->end = i + 1 < p->ntoks ? p->toks[i + 1].start : (int) strlen(p->text);
		t->len = token_length(p->text + t->start, t->end - t->start);
		t->reserved = false;
		if (t->word != NULL && t->code != IDENT)
		{
			int			kwnum = ScanKeywordLookup(t->word, &ScanKeywords);

			t->reserved = kwnum >= 0 && ScanKeywordCategories[kwnum] == RESERVED_KEYWORD;
		}
	}
}

/* Source text of the current token, for messages. */
static char *
tok_text(Parser *p, int i)
{
	Tok		   *t = &p->toks[i];

	if (t->code == 0)
		return NULL;
	return pnstrdup(p->text + t->start, t->len);
}

/*
 * The tokens [from, to) written again without the space and comments
 * between them (a space between two words): names and sources.
 */
static char *
tokens_text(Parser *p, int from, int to)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = from; i < to; i++)
	{
		if (i > from && p->toks[i].word != NULL && p->toks[i - 1].word != NULL)
			appendStringInfoChar(&buf, ' ');
		appendBinaryStringInfo(&buf, p->text + p->toks[i].start, p->toks[i].len);
	}
	return buf.data;
}

/* Can the token at i be (part of) a name? */
static bool
is_name_token(Parser *p, int i)
{
	return p->toks[i].code == IDENT || (p->toks[i].word != NULL && !p->toks[i].reserved);
}

/* Report a syntax error at token i: "expected ...". */
static void
syntax_error(Parser *p, int i, const char *expected)
{
	char	   *near = tok_text(p, i);

	ereport(ERROR,
			(errcode(ERRCODE_SYNTAX_ERROR),
			 near ? errmsg("syntax error at or near \"%s\"", near)
			 : errmsg("syntax error at end of input"),
			 errdetail("Expected %s.", expected),
			 internalerrposition(pg_mbstrlen_with_len(p->text, p->toks[i].start) + 1),
			 internalerrquery(p->text)));
}

/* Is the token at i the word w? */
static bool
is_word(Parser *p, int i, const char *w)
{
	return i < p->ntoks && p->toks[i].word != NULL && strcmp(p->toks[i].word, w) == 0;
}

/* Is the token at i the character c? */
static bool
is_char(Parser *p, int i, char c)
{
	return i < p->ntoks && p->toks[i].code == (unsigned char) c;
}

/* Consume word w, or fail with "expected <what>". */
static void
expect_word(Parser *p, const char *w, const char *what)
{
	if (!is_word(p, p->pos, w))
		syntax_error(p, p->pos, what);
	p->pos++;
}

/* Consume character c, or fail. */
static void
expect_char(Parser *p, char c, const char *what)
{
	if (!is_char(p, p->pos, c))
		syntax_error(p, p->pos, what);
	p->pos++;
}

/* STORED AS SCD TYPE 1 | SCD TYPE 2 | BITEMPORAL (after STORED AS). */
static void
parse_stored_as(Parser *p, AutocdcStmt *s)
{
	if (is_word(p, p->pos, "bitemporal"))
	{
		s->scd_type = "bitemporal";
		p->pos++;
	}
	else
	{
		expect_word(p, "scd", "SCD TYPE 1, SCD TYPE 2 or BITEMPORAL");
		expect_word(p, "type", "TYPE");
		if (p->toks[p->pos].code != ICONST ||
			(strcmp(tok_text(p, p->pos), "1") != 0 && strcmp(tok_text(p, p->pos), "2") != 0))
			syntax_error(p, p->pos, "1 or 2 after SCD TYPE");
		s->scd_type = tok_text(p, p->pos);
		p->pos++;
	}
}

/* Text of tokens [from, to) with surrounding space trimmed. */
static char *
span_text(Parser *p, int from, int to)
{
	int			s = p->toks[from].start;
	int			e = to < p->ntoks ? p->toks[to].start : (int) strlen(p->text);

	while (e > s && isspace((unsigned char) p->text[e - 1]))
		e--;
	return pnstrdup(p->text + s, e - s);
}

/* A (possibly qualified) name: ident [. ident]; returns its source text. */
static char *
parse_name(Parser *p, const char *what)
{
	int			from = p->pos;

	if (!is_name_token(p, p->pos))
		syntax_error(p, p->pos, what);
	p->pos++;
	while (is_char(p, p->pos, '.'))
	{
		p->pos++;
		if (!is_name_token(p, p->pos))
			syntax_error(p, p->pos, what);
		p->pos++;
	}
	return tokens_text(p, from, p->pos);
}

/*
 * ( col [, ...] ): a list of column names as source text; with renames an
 * entry may be "col AS name" (a pseudo-column of changes() renamed).
 */
static List *
parse_column_list(Parser *p, bool renames)
{
	List	   *cols = NIL;

	expect_char(p, '(', "\"(\" and a list of column names");
	for (;;)
	{
		char	   *col;

		if (!is_name_token(p, p->pos))
			syntax_error(p, p->pos, "a column name");
		col = tok_text(p, p->pos);
		p->pos++;
		if (renames && is_word(p, p->pos, "as"))
		{
			p->pos++;
			if (!is_name_token(p, p->pos))
				syntax_error(p, p->pos, "a column name after AS");
			col = psprintf("%s AS %s", col, tok_text(p, p->pos));
			p->pos++;
		}
		cols = lappend(cols, col);
		if (is_char(p, p->pos, ','))
		{
			p->pos++;
			continue;
		}
		expect_char(p, ')', "\",\" or \")\"");
		break;
	}
	return cols;
}

/*
 * Which clause starts at token i (CL_NONE if none)?  Used both to dispatch
 * and to find where an expression ends.
 */
static int
clause_at(Parser *p, int i)
{
	if (is_word(p, i, "ignore") && is_word(p, i + 1, "null"))
		return CL_IGNORE_NULLS;
	if (is_word(p, i, "apply") && is_word(p, i + 1, "as"))
	{
		if (is_word(p, i + 2, "truncate"))
			return CL_TRUNCATE;
		return CL_DELETE;
	}
	if (is_word(p, i, "sequence") && is_word(p, i + 1, "by"))
		return CL_SEQUENCE;
	if (is_word(p, i, "system") && is_word(p, i + 1, "sequence"))
		return CL_SYSTEM_SEQUENCE;
	if (is_word(p, i, "columns") && is_word(p, i + 1, "to"))
		return CL_COLUMNS_TO_UPDATE;
	if (is_word(p, i, "columns") && (is_char(p, i + 1, '(') || is_char(p, i + 1, '*')))
		return CL_COLUMNS;
	if (is_word(p, i, "stored") && is_word(p, i + 1, "as"))
		return CL_STORED;
	if (is_word(p, i, "track") && is_word(p, i + 1, "history"))
		return CL_TRACK;
	return CL_NONE;
}

/*
 * Check an expression's syntax with PostgreSQL's parser now, so that a
 * syntax error anywhere in the block wins over what statements would do.
 * (Names and types are checked by create_flow against the source.)
 */
static void
check_expression_syntax(Parser *p, int from, const char *expr, const char *after)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *sql = psprintf("SELECT (\n%s\n)", expr);

	PG_TRY();
	{
		List	   *raw = raw_parser(sql, RAW_PARSE_DEFAULT);

		if (list_length(raw) != 1)
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("the expression after %s is not a single expression", after)));
	}
	PG_CATCH();
	{
		ErrorData  *edata;
		int			pos;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		/* map the position in "SELECT (\n<expr>" back into the block */
		pos = pg_mbstrlen_with_len(p->text, p->toks[from].start) + 1;
		if (edata->cursorpos > 9)
			pos += edata->cursorpos - 10;
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s", edata->message),
				 errdetail("Expected an expression after %s.", after),
				 internalerrposition(pos),
				 internalerrquery(p->text)));
	}
	PG_END_TRY();
}

/*
 * An expression: the tokens up to the next clause, ";" or the end, at
 * parenthesis depth 0.  STRUCT( is written ROW( as in SQL.
 */
static char *
parse_expression(Parser *p, const char *after)
{
	int			from = p->pos;
	int			depth = 0;
	StringInfoData buf;
	int			i;
	int			last;

	while (p->toks[p->pos].code != 0)
	{
		Tok		   *t = &p->toks[p->pos];

		if (depth == 0 && (t->code == ';' || clause_at(p, p->pos) != CL_NONE))
			break;
		if (t->code == '(' || t->code == '[')
			depth++;
		else if (t->code == ')' || t->code == ']')
		{
			if (depth == 0)
				syntax_error(p, p->pos, "an expression with balanced parentheses");
			depth--;
		}
		p->pos++;
	}
	if (depth > 0)
		syntax_error(p, p->pos, "\")\"");
	if (p->pos == from)
		syntax_error(p, p->pos, psprintf("an expression after %s", after));

	/* copy the text, turning STRUCT( into ROW( */
	initStringInfo(&buf);
	last = p->toks[from].start;
	for (i = from; i < p->pos; i++)
	{
		if (is_word(p, i, "struct") && is_char(p, i + 1, '('))
		{
			appendBinaryStringInfo(&buf, p->text + last, p->toks[i].start - last);
			appendStringInfoString(&buf, "ROW");
			last = p->toks[i + 1].start;
		}
	}
	{
		int			e = p->toks[p->pos].start;

		if (p->toks[p->pos].code == 0)
			e = strlen(p->text);
		while (e > last && isspace((unsigned char) p->text[e - 1]))
			e--;
		appendBinaryStringInfo(&buf, p->text + last, e - last);
	}
	check_expression_syntax(p, from, buf.data, after);
	return buf.data;
}

/*
 * COLUMNS / TRACK HISTORY ON selection: ( list ) or * EXCEPT ( list ); with
 * renames a listed entry may be "col AS name".
 */
static void
parse_selection(Parser *p, List **include, List **except, bool renames)
{
	if (is_char(p, p->pos, '*'))
	{
		p->pos++;
		expect_word(p, "except", "EXCEPT after \"*\"");
		*except = parse_column_list(p, false);
	}
	else
		*include = parse_column_list(p, renames);
}

/* The clauses of CREATE FLOW ... AS AUTO CDC INTO t after FROM source. */
static void
parse_flow_clauses(Parser *p, AutocdcStmt *s)
{
	int			last = CL_NONE;

	expect_word(p, "keys", "KEYS");
	s->keys = parse_column_list(p, false);
	while (p->toks[p->pos].code != 0 && !is_char(p, p->pos, ';'))
	{
		int			cl = clause_at(p, p->pos);
		int			at = p->pos;

		if (cl == CL_NONE)
			syntax_error(p, p->pos, last < CL_SEQUENCE ?
						 "a clause of CREATE FLOW (IGNORE NULL UPDATES, APPLY AS DELETE WHEN, APPLY AS TRUNCATE WHEN, SEQUENCE BY)" :
						 "a clause of CREATE FLOW (SYSTEM SEQUENCE BY, COLUMNS, STORED AS, TRACK HISTORY ON, COLUMNS TO UPDATE) or \";\"");
		if (cl == last)
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("%s appears more than once", clause_names[cl]),
					 internalerrposition(pg_mbstrlen_with_len(p->text, p->toks[at].start) + 1),
					 internalerrquery(p->text)));
		if (cl < last)
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR),
					 errmsg("%s must come before %s", clause_names[cl], clause_names[last]),
					 errhint("Write the clauses of CREATE FLOW in the documented order."),
					 internalerrposition(pg_mbstrlen_with_len(p->text, p->toks[at].start) + 1),
					 internalerrquery(p->text)));
		last = cl;
		switch (cl)
		{
			case CL_IGNORE_NULLS:
				p->pos++;
				expect_word(p, "null", "NULL");
				expect_word(p, "updates", "UPDATES");
				if (is_word(p, p->pos, "on"))
				{
					/* ON ( list ) | ON * EXCEPT ( list ): the column lists */
					p->pos++;
					parse_selection(p, &s->inu_list, &s->inu_except_list, false);
					s->has_inu_list = s->inu_list != NIL;
					s->has_inu_except = s->inu_except_list != NIL;
				}
				else
					s->ignore_nulls = true;
				break;
			case CL_DELETE:
				p->pos += 2;
				expect_word(p, "delete", "DELETE or TRUNCATE after APPLY AS");
				expect_word(p, "when", "WHEN");
				s->deletes = parse_expression(p, "APPLY AS DELETE WHEN");
				break;
			case CL_TRUNCATE:
				p->pos += 3;
				expect_word(p, "when", "WHEN");
				s->truncates = parse_expression(p, "APPLY AS TRUNCATE WHEN");
				break;
			case CL_SEQUENCE:
				p->pos += 2;
				s->sequence_by = parse_expression(p, "SEQUENCE BY");
				break;
			case CL_SYSTEM_SEQUENCE:
				p->pos += 2;
				expect_word(p, "by", "BY");
				s->system_sequence_by = parse_expression(p, "SYSTEM SEQUENCE BY");
				break;
			case CL_COLUMNS:
				p->pos++;
				parse_selection(p, &s->column_list, &s->except_column_list, true);
				s->has_column_list = s->column_list != NIL;
				break;
			case CL_STORED:
				p->pos += 2;
				parse_stored_as(p, s);
				break;
			case CL_TRACK:
				p->pos += 2;
				expect_word(p, "on", "ON");
				parse_selection(p, &s->track_list, &s->track_except_list, false);
				s->has_track_list = s->track_list != NIL;
				break;
			case CL_COLUMNS_TO_UPDATE:
				p->pos += 2;
				expect_word(p, "update", "UPDATE");
				if (!is_name_token(p, p->pos))
					syntax_error(p, p->pos, "a column name after COLUMNS TO UPDATE");
				s->columns_to_update = tok_text(p, p->pos);
				p->pos++;
				break;
		}
	}
	if (s->sequence_by == NULL && !s->snapshot &&
		(s->srckind == NULL || s->srckind->default_sequence_by == NULL))
		syntax_error(p, p->pos, "SEQUENCE BY, which CREATE FLOW from a feed requires");
}

/*
 * A parenthesized query: the text between "(" and its matching ")",
 * checked by PostgreSQL's parser now (a syntax error in the block wins).
 */
static char *
parse_query_in_parens(Parser *p, const char *what)
{
	int			from;
	int			depth = 0;
	char	   *sql;
	MemoryContext cxt = CurrentMemoryContext;

	expect_char(p, '(', what);
	from = p->pos;
	while (depth > 0 || !is_char(p, p->pos, ')'))
	{
		if (p->toks[p->pos].code == 0)
			syntax_error(p, p->pos, "\")\" closing the query");
		if (is_char(p, p->pos, '('))
			depth++;
		else if (is_char(p, p->pos, ')'))
			depth--;
		p->pos++;
	}
	if (p->pos == from)
		syntax_error(p, p->pos, "a query");
	sql = span_text(p, from, p->pos);
	p->pos++;
	PG_TRY();
	{
		(void) raw_parser(sql, RAW_PARSE_DEFAULT);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("%s", edata->message),
				 internalerrposition(pg_mbstrlen_with_len(p->text, p->toks[from].start) +
									 Max(edata->cursorpos, 1)),
				 internalerrquery(p->text)));
	}
	PG_END_TRY();
	return sql;
}

/*
 * CREATE FLOW name AS AUTO CDC [ONCE] INTO ..., or APPLY CHANGES INTO ...
 * (the caller consumed up to INTO).
 */
static void
parse_flow_body(Parser *p, AutocdcStmt *s)
{
	int			from;
	int			depth = 0;

	s->target = parse_name(p, "the name of the target table");
	expect_word(p, "from", "FROM and the source");
	if (is_word(p, p->pos, "snapshot"))
	{
		p->pos++;
		s->snapshot = true;
		if (is_char(p, p->pos, '('))
		{
			s->source_query = parse_query_in_parens(p, "\"(\" and the snapshot query");
			if (is_word(p, p->pos, "with") && is_word(p, p->pos + 1, "version"))
			{
				p->pos += 2;
				s->version_query = parse_query_in_parens(p, "\"(\" and the version query after WITH VERSION");
			}
		}
		else
			s->source = parse_name(p, "the snapshot relation or (query)");
		expect_word(p, "keys", "KEYS");
		s->keys = parse_column_list(p, false);
		if (is_word(p, p->pos, "stored") && is_word(p, p->pos + 1, "as"))
		{
			p->pos += 2;
			parse_stored_as(p, s);
		}
		if (is_word(p, p->pos, "track"))
		{
			p->pos++;
			expect_word(p, "history", "HISTORY");
			expect_word(p, "on", "ON");
			parse_selection(p, &s->track_list, &s->track_except_list, false);
		}
		return;
	}
	/* stream(x) | x | changes(x) | stream(changes(x)) | STREAM x */
	from = p->pos;
	if (is_word(p, p->pos, "stream") && is_char(p, p->pos + 1, '('))
	{
		p->pos += 2;
		depth++;
	}
	else if (is_word(p, p->pos, "stream") && is_name_token(p, p->pos + 1) &&
			 !is_word(p, p->pos + 1, "keys"))
		p->pos++;
	/* a wrapped source kind, such as changes(x) */
	if (p->pos < p->ntoks && p->toks[p->pos].word != NULL && is_name_token(p, p->pos) &&
		is_char(p, p->pos + 1, '(') &&
		(s->srckind = srckind_by_wrapper(p->toks[p->pos].word)) != NULL)
	{
		p->pos += 2;
		depth++;
	}
	(void) parse_name(p, "the source: a table, stream(table) or changes(table)");
	while (depth-- > 0)
		expect_char(p, ')', "\")\"");
	s->source = tokens_text(p, from, p->pos);
	if (pg_strncasecmp(s->source, "stream ", 7) == 0)
		s->source = psprintf("stream(%s)", s->source + 7);
	parse_flow_clauses(p, s);
}

/* The name an identifier token stands for (a quoted one without its quotes). */
static char *
ident_value(Parser *p, int i)
{
	char	   *text = tok_text(p, i);
	StringInfoData buf;
	int			k;

	if (p->toks[i].word != NULL)
		return pstrdup(p->toks[i].word);
	initStringInfo(&buf);
	for (k = 1; text[k] != '\0' && text[k + 1] != '\0'; k++)
	{
		appendStringInfoChar(&buf, text[k]);
		if (text[k] == '"')
			k++;				/* "" stands for " */
	}
	return buf.data;
}

/*
 * CONSTRAINT name EXPECT ( expr ) [ ON VIOLATION { DROP ROW | FAIL UPDATE } ]
 * at p->pos (at CONSTRAINT), if it is one: added to s->expectations.
 */
static bool
parse_expect_element(Parser *p, AutocdcStmt *s)
{
	AutocdcExpect *e;
	int			from;
	int			depth = 1;

	if (!is_word(p, p->pos, "constraint") || !is_name_token(p, p->pos + 1) ||
		!is_word(p, p->pos + 2, "expect"))
		return false;
	e = palloc0(sizeof(AutocdcExpect));
	e->name = ident_value(p, p->pos + 1);
	p->pos += 3;
	expect_char(p, '(', "\"(\" and the expectation's condition after EXPECT");
	from = p->pos;
	while (depth > 0)
	{
		if (p->toks[p->pos].code == 0)
			syntax_error(p, p->pos, "\")\" closing the expectation's condition");
		if (is_char(p, p->pos, '('))
			depth++;
		else if (is_char(p, p->pos, ')'))
			depth--;
		p->pos++;
	}
	if (p->pos - 1 == from)
		syntax_error(p, from, "a condition after EXPECT (");
	e->condition = span_text(p, from, p->pos - 1);
	check_expression_syntax(p, from, e->condition, "EXPECT (");
	e->action = "warn";
	if (is_word(p, p->pos, "on"))
	{
		p->pos++;
		expect_word(p, "violation", "VIOLATION after ON");
		if (is_word(p, p->pos, "drop"))
		{
			p->pos++;
			expect_word(p, "row", "ROW after DROP");
			e->action = "drop";
		}
		else
		{
			expect_word(p, "fail", "DROP ROW or FAIL UPDATE after ON VIOLATION");
			expect_word(p, "update", "UPDATE after FAIL");
			e->action = "fail";
		}
	}
	if (!is_char(p, p->pos, ',') && !is_char(p, p->pos, ')'))
		syntax_error(p, p->pos, "\",\" or \")\" after the expectation");
	s->expectations = lappend(s->expectations, e);
	return true;
}

/*
 * CREATE STREAMING TABLE's ( element [, ...] ): the expectations, and the
 * other elements (columns, constraints) kept as the text of a CREATE TABLE
 * (column_defs; NULL when there are only expectations).
 */
static void
parse_table_elements(Parser *p, AutocdcStmt *s)
{
	StringInfoData defs;
	int			open = p->pos;

	initStringInfo(&defs);
	p->pos++;					/* ( */
	for (;;)
	{
		int			from = p->pos;
		int			depth = 0;

		if (!parse_expect_element(p, s))
		{
			while (depth > 0 || (!is_char(p, p->pos, ',') && !is_char(p, p->pos, ')')))
			{
				if (p->toks[p->pos].code == 0)
					syntax_error(p, p->pos, "\")\" closing the column definitions");
				if (is_char(p, p->pos, '('))
					depth++;
				else if (is_char(p, p->pos, ')'))
					depth--;
				p->pos++;
			}
			if (p->pos > from)
				appendStringInfo(&defs, "%s%s", defs.len > 0 ? ",\n" : "",
								 span_text(p, from, p->pos));
		}
		if (is_char(p, p->pos++, ')'))
			break;
	}
	if (s->expectations == NIL)
		s->column_defs = span_text(p, open + 1, p->pos - 1);
	else if (defs.len > 0)
		s->column_defs = defs.data;
}

/* One statement starting at p->pos. */
static AutocdcStmt *
parse_statement(Parser *p)
{
	AutocdcStmt *s = palloc0(sizeof(AutocdcStmt));

	s->location = p->toks[p->pos].start;
	if (is_word(p, p->pos, "create"))
	{
		p->pos++;
		if (is_word(p, p->pos, "or"))
		{
			p->pos++;
			expect_word(p, "refresh", "REFRESH after CREATE OR");
			s->or_refresh = true;
		}
		if (is_word(p, p->pos, "streaming"))
		{
			p->pos++;
			expect_word(p, "table", "TABLE after STREAMING");
			s->kind = STMT_STREAMING_TABLE;
			s->target = parse_name(p, "the name of the streaming table");
			if (is_char(p, p->pos, '('))
				parse_table_elements(p, s);
			if (is_word(p, p->pos, "distributed"))
			{
				p->pos++;
				expect_word(p, "by", "BY after DISTRIBUTED");
				expect_char(p, '(', "\"(\" and the distribution column");
				if (!is_name_token(p, p->pos))
					syntax_error(p, p->pos, "the distribution column");
				s->distributed_by = tok_text(p, p->pos++);
				expect_char(p, ')', "\")\" after the distribution column");
			}
			return s;
		}
		if (s->or_refresh)
			syntax_error(p, p->pos, "STREAMING TABLE after CREATE OR REFRESH");
		expect_word(p, "flow", "FLOW or STREAMING TABLE after CREATE");
		s->kind = STMT_CREATE_FLOW;
		s->name = parse_name(p, "the name of the flow");
		expect_word(p, "as", "AS");
		if (is_word(p, p->pos, "apply"))
		{
			p->pos++;
			expect_word(p, "changes", "CHANGES after APPLY");
		}
		else
		{
			expect_word(p, "auto", "AUTO CDC");
			expect_word(p, "cdc", "CDC after AUTO");
		}
		if (is_word(p, p->pos, "once"))
		{
			p->pos++;
			s->once = true;
		}
		expect_word(p, "into", "INTO");
		parse_flow_body(p, s);
		return s;
	}
	if (is_word(p, p->pos, "apply"))
	{
		p->pos++;
		expect_word(p, "changes", "CHANGES after APPLY");
		expect_word(p, "into", "INTO after APPLY CHANGES");
		s->kind = STMT_CREATE_FLOW;
		parse_flow_body(p, s);
		return s;
	}
	if (is_word(p, p->pos, "drop"))
	{
		p->pos++;
		expect_word(p, "flow", "FLOW after DROP");
		s->kind = STMT_DROP_FLOW;
		if (is_word(p, p->pos, "if"))
		{
			p->pos++;
			expect_word(p, "exists", "EXISTS after IF");
			s->if_exists = true;
		}
		s->name = parse_name(p, "the name of the flow");
		return s;
	}
	syntax_error(p, p->pos, "CREATE FLOW, CREATE STREAMING TABLE, APPLY CHANGES INTO or DROP FLOW");
	return NULL;
}

/*
 * Parse a block of ;-separated statements.  Lexical errors of the core
 * scanner are reported against the block, like syntax errors.
 */
/* Tokenize a block; the core scanner's errors are reported against it. */
static void
tokenize_block(Parser *p, const char *text)
{
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		tokenize(p);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(ERROR,
				(errcode(edata->sqlerrcode),
				 errmsg("%s", edata->message),
				 edata->cursorpos > 0 ? internalerrposition(edata->cursorpos) : 0,
				 internalerrquery(text)));
	}
	PG_END_TRY();
}

List *
autocdc_parse_block(const char *text)
{
	Parser		p;
	List	   *stmts = NIL;

	p.text = text;
	p.pos = 0;
	tokenize_block(&p, text);
	for (;;)
	{
		while (is_char(&p, p.pos, ';'))
			p.pos++;
		if (p.toks[p.pos].code == 0)
			break;
		stmts = lappend(stmts, parse_statement(&p));
		if (p.toks[p.pos].code != 0 && !is_char(&p, p.pos, ';'))
			syntax_error(&p, p.pos, "\";\" or the end of the block");
	}
	if (stmts == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_SYNTAX_ERROR),
				 errmsg("no autocdc statement to run"),
				 errhint("Write CREATE FLOW ..., CREATE STREAMING TABLE ..., APPLY CHANGES INTO ... or DROP FLOW ...")));
	return stmts;
}
