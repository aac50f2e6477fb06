/*
 * conf_xml.c - suspect.xml from XML to a snapshot, driven by the element
 * tables.  The only file of the loader that includes libxml2.
 *
 * Parsing is the limits file's (limits_xml.c): a private parser context
 * per call reading from memory (threads may load at once), options
 * XML_PARSE_NONET | NOERROR | NOWARNING | BIG_LINES and never NOENT,
 * DTDLOAD or DTDATTR.  Three SAX callbacks of the private context are
 * replaced: internalSubset, called for any <!DOCTYPE, records the line and
 * stops the parser before one declaration is read (so no entity is ever
 * declared, expanded or fetched); serror keeps libxml2's first
 * error and its line instead of printing it; and startElementNs
 * calls libxml2's own and then moves the element's line from the end of its
 * start tag to its '<', so an element written over several lines is
 * reported at its first line.
 *
 * Walking: walk() knows no element by name.  For an element and its table
 * row it calls the begin hook, then each attribute's setter (unknown
 * attributes are warnings, with a hint when only the case differs), checks
 * the required attributes, walks the child elements against the row's
 * child table (an unknown child is a warning, or an error under
 * CONF_STRICT; a second CONF_SINGLE child is an error naming the first's
 * line), and calls the end hook with the set of attributes seen.  Names
 * are compared by local name, so a namespace prefix does not matter.
 * Attribute values are trimmed of XML white space before the setter sees
 * them.  Attributes have no line of their own in libxml2: messages give
 * their element's line.
 */
#include "conf_internal.h"

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#define PARSE_OPTIONS                                                          \
    (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |               \
     XML_PARSE_BIG_LINES)
#define MAX_CHILD_DEFS 16

/* What the private callbacks saw during one parse (ctxt->_private). */
typedef struct parse_state {
    startElementNsSAX2Func start; /* libxml2's own, called by on_start */
    int dtd_line;                 /* line of <!DOCTYPE, 0 when none */
    int err_set;                  /* err_* hold libxml2's first error */
    int err_code;                 /* its xmlParserErrors code */
    int err_line;
    char err_text[SUSPECT_ERR_TEXT_MAX];
} parse_state_t;

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

/* libxml2 wants one initialisation before threads share it. */
static void xml_init(void)
{
    xmlInitParser();
}

/* True for the XML white space characters. */
static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* serror callback: keeps libxml2's first error (not its warnings), on one
 * line. */
static void on_xml_error(void *ctx, xmlErrorPtr e)
{
    xmlParserCtxtPtr ctxt = ctx;
    parse_state_t *st = ctxt->_private;
    size_t n;

    if (e == NULL || e->level < XML_ERR_ERROR || st->err_set) {
        return;
    }
    st->err_set = 1;
    st->err_code = e->code;
    st->err_line = e->line;
    snprintf(st->err_text, sizeof(st->err_text), "%s",
             e->message != NULL ? e->message : "unknown error");
    n = strlen(st->err_text);
    while (n > 0 && is_space(st->err_text[n - 1])) {
        st->err_text[--n] = '\0';
    }
    for (size_t i = 0; i < n; i++) {
        if (st->err_text[i] == '\n' || st->err_text[i] == '\r') {
            st->err_text[i] = ' ';
        }
    }
}

/* internalSubset callback: any DOCTYPE stops the parse, unread. */
static void on_doctype(void *ctx, const xmlChar *name, const xmlChar *ext_id,
                       const xmlChar *sys_id)
{
    xmlParserCtxtPtr ctxt = ctx;
    parse_state_t *st = ctxt->_private;

    (void)name;
    (void)ext_id;
    (void)sys_id;
    st->dtd_line =
        ctxt->input != NULL && ctxt->input->line > 0 ? ctxt->input->line : 1;
    xmlStopParser(ctxt);
}

/* The line of the '<' of the start tag being parsed, or 0.  The parser
 * is at (or just before) the tag's end, the whole tag in its buffer, and an
 * attribute value cannot hold a raw '<', so the tag starts at the last '<'
 * before cur. */
static int tag_start_line(xmlParserCtxtPtr ctxt)
{
    const xmlChar *base = ctxt->input->base, *p = ctxt->input->cur;
    int lines = 0;

    if (base == NULL || p == NULL) {
        return 0;
    }
    while (p > base && *--p != '<') {
        lines += *p == '\n';
    }
    return *p == '<' && ctxt->input->line > lines ? ctxt->input->line - lines
                                                  : 0;
}

/*
 * startElementNs callback: libxml2's own, then the element's line moved
 * from the end of its start tag (where libxml2 takes it) to its '<', so a
 * message about an element written over several lines names its first.
 * Lines past 65535 go to psvi, unused without schema validation, where
 * line_of() finds them.
 */
static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix,
                     const xmlChar *uri, int nns, const xmlChar **ns,
                     int nattrs, int ndefaulted, const xmlChar **attrs)
{
    xmlParserCtxtPtr ctxt = ctx;
    parse_state_t *st = ctxt->_private;
    int line = tag_start_line(ctxt);
    xmlNodePtr node;

    st->start(ctx, localname, prefix, uri, nns, ns, nattrs, ndefaulted, attrs);
    node = ctxt->node;
    if (line <= 0 || node == NULL || node->type != XML_ELEMENT_NODE ||
        !xmlStrEqual(node->name, localname)) {
        return;
    }
    if (line < 65535) {
        node->line = (unsigned short)line;
    } else {
        node->line = 65535;
        node->psvi = (void *)(ptrdiff_t)line;
    }
}

/* The line of node, at least 1: xmlGetLineNo(), or for an element past
 * line 65535 the line on_start() kept in psvi (xmlGetLineNo() only knows
 * big lines of text nodes, and guesses an element's from its
 * neighbours). */
static int line_of(const xmlNode *node)
{
    long line = xmlGetLineNo(node);

    if (node->type == XML_ELEMENT_NODE && node->line == 65535 &&
        node->psvi != NULL) {
        line = (long)(ptrdiff_t)node->psvi;
    }
    return line > 0 && line <= INT_MAX ? (int)line : 1;
}

/* The row of table named name, or -1; *near is a row whose name differs
 * only in case, or -1. */
static int find_attr(const conf_attr_t *table, const char *name, int *near)
{
    *near = -1;
    for (int i = 0; table[i].name != NULL; i++) {
        if (strcmp(table[i].name, name) == 0) {
            return i;
        }
        if (strcasecmp(table[i].name, name) == 0) {
            *near = i;
        }
    }
    return -1;
}

/* As find_attr(), for child element rows. */
static int find_child(const conf_elem_t *const *table, const char *name,
                      int *near)
{
    *near = -1;
    for (int i = 0; table != NULL && table[i] != NULL; i++) {
        if (strcmp(table[i]->name, name) == 0) {
            return i;
        }
        if (strcasecmp(table[i]->name, name) == 0) {
            *near = i;
        }
    }
    return -1;
}

/* Warns about an unknown attribute (with its prefix, and a hint). */
static suspect_rc_t warn_attr(conf_build_t *b, const conf_elem_t *def,
                              const xmlAttr *attr, const char *hint, int line)
{
    const char *prefix = attr->ns != NULL && attr->ns->prefix != NULL
                             ? (const char *)attr->ns->prefix
                             : NULL;

    return conf_warn(b, line, "%s: unknown attribute '%s%s%.64s' ignored%s%s%s",
                     def->name, prefix != NULL ? prefix : "",
                     prefix != NULL ? ":" : "", (const char *)attr->name,
                     hint != NULL ? " (did you mean '" : "",
                     hint != NULL ? hint : "", hint != NULL ? "'?)" : "");
}

/* Reads one attribute of el through its row's setter; *seen gets its bit. */
static suspect_rc_t read_attr(conf_build_t *b, const conf_elem_t *def,
                              xmlNodePtr el, xmlAttrPtr attr, void *obj,
                              int line, uint32_t *seen)
{
    int near, i = attr->ns == NULL
                      ? find_attr(def->attrs, (const char *)attr->name, &near)
                      : (near = -1, -1);
    const char *p;
    xmlChar *value;
    size_t n;
    suspect_rc_t rc;

    if (i < 0) {
        return warn_attr(b, def, attr, near >= 0 ? def->attrs[near].name : NULL,
                         line);
    }
    value = xmlNodeListGetString(el->doc, attr->children, 1);
    if (value == NULL && attr->children != NULL) {
        return conf_nomem(b, line);
    }
    p = value != NULL ? (const char *)value : "";
    n = strlen(p);
    while (n > 0 && is_space(*p)) {
        p++;
        n--;
    }
    while (n > 0 && is_space(p[n - 1])) {
        n--;
    }
    {
        conf_site_t at = {def->name, def->attrs[i].name, line};
        rc = def->attrs[i].set(b, &at, obj, &def->attrs[i], p, n);
    }
    xmlFree(value);
    *seen |= 1u << i;
    return rc;
}

/* The attributes of el, then the required ones that are missing. */
static suspect_rc_t read_attrs(conf_build_t *b, const conf_elem_t *def,
                               xmlNodePtr el, void *obj, int line,
                               uint32_t *seen)
{
    suspect_rc_t rc = SUSPECT_OK;

    for (xmlAttrPtr a = el->properties; a != NULL && rc == SUSPECT_OK;
         a = a->next) {
        rc = read_attr(b, def, el, a, obj, line, seen);
    }
    for (int i = 0; rc == SUSPECT_OK && def->attrs[i].name != NULL; i++) {
        if ((def->attrs[i].flags & CONF_REQUIRED) && !(*seen & (1u << i))) {
            rc = conf_fail(b, line, "%s: %s is required", def->name,
                           def->attrs[i].name);
        }
    }
    return rc;
}

static suspect_rc_t walk(conf_build_t *b, const conf_elem_t *def, xmlNodePtr el,
                         void *obj);

/* An element child of a parent of row def that no row describes: under
 * CONF_STRICT an error listing what is allowed, else a warning. */
static suspect_rc_t unknown_child(conf_build_t *b, const conf_elem_t *def,
                                  const xmlNode *c, int near)
{
    const char *hint = near >= 0 ? def->children[near]->name : NULL;
    char allowed[128];
    size_t used = 0;

    if (def->flags & CONF_STRICT) {
        allowed[0] = '\0';
        for (int i = 0; def->children[i] != NULL && used < sizeof(allowed);
             i++) {
            int w = snprintf(allowed + used, sizeof(allowed) - used, "%s<%s>",
                             i > 0 ? ", " : "", def->children[i]->name);
            used += w > 0 ? (size_t)w : 0;
        }
        return conf_fail(b, line_of(c),
                         "%s: unknown element <%.64s> (it may only hold %s)",
                         def->name, (const char *)c->name, allowed);
    }
    return conf_warn(b, line_of(c), "%s: unknown element <%.64s> ignored%s%s%s",
                     def->name, (const char *)c->name,
                     hint != NULL ? " (did you mean <" : "",
                     hint != NULL ? hint : "", hint != NULL ? ">?)" : "");
}

/* The child elements of el, each against def's child table. */
static suspect_rc_t walk_children(conf_build_t *b, const conf_elem_t *def,
                                  xmlNodePtr el, void *obj)
{
    int first[MAX_CHILD_DEFS] = {0};
    suspect_rc_t rc = SUSPECT_OK;

    for (xmlNodePtr c = el->children; c != NULL && rc == SUSPECT_OK;
         c = c->next) {
        int near, i;
        if (c->type != XML_ELEMENT_NODE) {
            continue;
        }
        i = find_child(def->children, (const char *)c->name, &near);
        if (i < 0 || i >= MAX_CHILD_DEFS) {
            rc = unknown_child(b, def, c, near);
        } else if ((def->children[i]->flags & CONF_SINGLE) && first[i] > 0) {
            rc = conf_fail(b, line_of(c), "<%s> given twice (first on line %d)",
                           def->children[i]->name, first[i]);
        } else {
            first[i] = line_of(c);
            rc = walk(b, def->children[i], c, obj);
        }
    }
    return rc;
}

/* One element: begin, line, attributes, children, end. */
static suspect_rc_t walk(conf_build_t *b, const conf_elem_t *def, xmlNodePtr el,
                         void *obj)
{
    int line = line_of(el);
    size_t nchildren = xmlChildElementCount(el);
    uint32_t seen = 0;
    suspect_rc_t rc = SUSPECT_OK;

    if (def->begin != NULL) {
        rc = def->begin(b, line, nchildren, &obj);
    }
    if (rc == SUSPECT_OK && def->line_offset != 0) {
        *(int *)((char *)obj + def->line_offset) = line;
    }
    if (rc == SUSPECT_OK) {
        rc = read_attrs(b, def, el, obj, line, &seen);
    }
    if (rc == SUSPECT_OK) {
        rc = walk_children(b, def, el, obj);
    }
    if (rc == SUSPECT_OK && def->end != NULL) {
        rc = def->end(b, obj, seen, line);
    }
    return rc;
}

/* Turns what the parser saw into an error, or SUSPECT_OK for a document
 * that is well-formed, DTD-free and has a root. */
static suspect_rc_t check_document(conf_build_t *b, xmlParserCtxtPtr ctxt,
                                   xmlDocPtr doc, const parse_state_t *st)
{
    const char *file = b->conf->file;

    if (st->dtd_line > 0 ||
        (doc != NULL && (doc->intSubset != NULL || doc->extSubset != NULL))) {
        return suspect_err_set(b->err, SUSPECT_E_PARSE, file,
                               st->dtd_line > 0 ? st->dtd_line : 1,
                               "DTD not allowed");
    }
    if (st->err_set && st->err_code == XML_ERR_NO_MEMORY) {
        return conf_nomem(b, 0);
    }
    if (st->err_set) {
        return suspect_err_set(b->err, SUSPECT_E_PARSE, file, st->err_line,
                               "not well-formed XML: %s", st->err_text);
    }
    if (doc == NULL || !ctxt->wellFormed || xmlDocGetRootElement(doc) == NULL) {
        return suspect_err_set(b->err, SUSPECT_E_PARSE, file, 0,
                               "not well-formed XML: no document");
    }
    return SUSPECT_OK;
}

/* Parses buf with a private libxml2 context and walks it from the root. */
suspect_rc_t conf_xml_parse(const char *buf, size_t len, conf_build_t *b)
{
    parse_state_t st;
    xmlParserCtxtPtr ctxt;
    xmlDocPtr doc;
    xmlNodePtr root;
    suspect_rc_t rc;

    if (len > INT_MAX) {
        return conf_fail(b, 0, "file is too large");
    }
    pthread_once(&xml_once, xml_init);
    ctxt = xmlNewParserCtxt();
    if (ctxt == NULL) {
        return conf_nomem(b, 0);
    }
    memset(&st, 0, sizeof(st));
    ctxt->_private = &st;
    ctxt->sax->internalSubset = on_doctype;
    ctxt->sax->serror = on_xml_error;
    st.start = ctxt->sax->startElementNs;
    if (st.start != NULL) {
        ctxt->sax->startElementNs = on_start;
    }
    doc = xmlCtxtReadMemory(ctxt, buf, (int)len, NULL, NULL, PARSE_OPTIONS);
    rc = check_document(b, ctxt, doc, &st);
    if (rc == SUSPECT_OK) {
        root = xmlDocGetRootElement(doc);
        if (strcmp((const char *)root->name, conf_root.name) != 0) {
            rc = conf_fail(b, line_of(root),
                           "root element is <%.64s>, expected <%s>",
                           (const char *)root->name, conf_root.name);
        } else {
            rc = walk(b, &conf_root, root, b->conf);
        }
    }
    xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctxt);
    return rc;
}
