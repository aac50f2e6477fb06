/*
 * xmlrpc.c - the calls of an XML-RPC body, read strictly: see xmlrpc.h.
 *
 * The document is parsed by libxml2 through config/xmlsafe.c (no DTD, so
 * no entity but the five predefined ones and character references, which
 * every XML parser decodes alike; no network; libxml2's own bounds on
 * depth and names), then walked here into plain calls, and freed.
 *
 * The shape read is the XML-RPC specification's, as WordPress's IXR
 * reads it:
 *   <methodCall><methodName>M</methodName>
 *     <params><param><value>V</value></param>...</params></methodCall>
 * V is text (a string), or one element: <string>, <int>, <i4>, <boolean>,
 * <double>, <base64>, <dateTime.iso8601>, <struct> (<member>s of
 * <name> and <value>), <array> (<data> of <value>s).  A method named
 * system.multicall takes one parameter, an array of structs with the
 * members methodName and params: its calls are those.
 *
 * Refused (SUSPECT_E_PARSE), since some parser would read them another
 * way, or the application would act on what the guard did not read:
 *  - anything but whitespace, comments and processing instructions beside
 *    the elements above, an unknown element, an element in a namespace;
 *  - <methodName> or <params> given twice (IXR keeps the last), a
 *    <param> with no <value> or two, a <value> holding two elements, or
 *    text beside its element;
 *  - in a multicall, a struct with a member given twice (its name
 *    trimmed, as IXR trims it) or with no methodName, a call that is not
 *    a struct, params that are not an array, a system.multicall inside
 *    one (WordPress runs it again);
 *  - a value IXR drops, moving the next ones: one without a type whose
 *    text is blank, one of a type it does not know (<nil/> among them);
 *  - a body that does not start with '<' after blanks (a byte order
 *    mark), or holds "<?xml" anywhere but at its start (WordPress deletes
 *    the first "<?xml...?>" of its first 100 bytes, where libxml2 reads
 *    a comment or a value), or declares another encoding than UTF-8
 *    (WordPress deletes the declaration and reads UTF-8).
 * An <int> is read as PHP's (int) cast leaves digits: "007" is 7; one
 * that is not an optional '-' and at most 18 digits is refused, since
 * (int)"27abc" is 27.
 */
#include "request/xmlrpc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/tree.h>

#include "alloc.h"
#include "xmlsafe.h"

#define MULTICALL     "system.multicall"
#define MULTICALL_LEN 16

/* A parameter: T_TEXT (its text), T_OTHER (of another type: refused as an
 * identity). */
enum { T_TEXT = 1, T_OTHER };

typedef struct xr_param {
    int type;
    char *text;
    size_t len;
} xr_param_t;

typedef struct xr_call {
    char *method;
    size_t method_len;
    size_t nparams;
    xr_param_t param[MW_XR_MAX_PARAMS];
} xr_call_t;

struct mw_xmlrpc {
    size_t ncalls, cap, max;
    xr_call_t *call;
    const char *why;
};

/* Refuses the body: why. */
static suspect_rc_t bad(mw_xmlrpc_t *x, const char *why)
{
    x->why = why;
    return SUSPECT_E_PARSE;
}

static bool named(const xmlNode *n, const char *name)
{
    return n->ns == NULL && strcmp((const char *)n->name, name) == 0;
}

static bool blank(const xmlChar *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n') {
            return false;
        }
    }
    return true;
}

/* The next element child of n from *cur on, into *el (NULL at the end):
 * SUSPECT_OK, or refused for text that is not blank, CDATA, an entity. */
static suspect_rc_t next_el(mw_xmlrpc_t *x, xmlNode **cur, xmlNode **el)
{
    for (xmlNode *k = *cur; k != NULL; k = k->next) {
        switch (k->type) {
        case XML_ELEMENT_NODE:
            *el = k;
            *cur = k->next;
            return SUSPECT_OK;
        case XML_TEXT_NODE:
            if (!blank(k->content)) {
                return bad(x, "XML-RPC text beside an element");
            }
            break;
        case XML_COMMENT_NODE:
        case XML_PI_NODE:
            break;
        default:
            return bad(x, "XML-RPC node of an unexpected kind");
        }
    }
    *el = NULL;
    *cur = NULL;
    return SUSPECT_OK;
}

/* The text of n (text and CDATA children only) into a new string. */
static suspect_rc_t text_of(mw_xmlrpc_t *x, const xmlNode *n, char **out,
                            size_t *len)
{
    size_t total = 0;
    char *s;

    for (const xmlNode *k = n->children; k != NULL; k = k->next) {
        if (k->type == XML_TEXT_NODE || k->type == XML_CDATA_SECTION_NODE) {
            total += strlen((const char *)k->content);
        } else if (k->type != XML_COMMENT_NODE && k->type != XML_PI_NODE) {
            return bad(x, "XML-RPC element inside a text value");
        }
    }
    s = suspect_malloc(total + 1);
    if (s == NULL) {
        return SUSPECT_E_NOMEM;
    }
    total = 0;
    for (const xmlNode *k = n->children; k != NULL; k = k->next) {
        if (k->type == XML_TEXT_NODE || k->type == XML_CDATA_SECTION_NODE) {
            size_t l = strlen((const char *)k->content);
            memcpy(s + total, k->content, l);
            total += l;
        }
    }
    s[total] = '\0';
    *out = s;
    *len = total;
    return SUSPECT_OK;
}

/* Trims blanks off both ends of s[0..*len) in place. */
static void trim(char *s, size_t *len)
{
    size_t a = 0, n = *len;

    while (a < n && strchr(" \t\r\n", s[a]) != NULL) {
        a++;
    }
    while (n > a && strchr(" \t\r\n", s[n - 1]) != NULL) {
        n--;
    }
    memmove(s, s + a, n - a);
    s[n - a] = '\0';
    *len = n - a;
}

/* An <int>'s text made what PHP's (int) cast prints: false when it is
 * not an optional '-' and 1 .. 18 digits. */
static bool int_text(char *s, size_t *len)
{
    size_t i, digits;
    long long v;

    trim(s, len);
    i = *len > 0 && s[0] == '-' ? 1 : 0;
    digits = *len - i;
    if (digits == 0 || digits > 18 || strspn(s + i, "0123456789") != digits) {
        return false;
    }
    v = strtoll(s, NULL, 10);
    *len = (size_t)snprintf(s, *len + 1, "%lld", v);
    return true;
}

/* The one element of a <value>, or NULL for a text value; refused when
 * it holds two, or text beside one. */
static suspect_rc_t value_el(mw_xmlrpc_t *x, xmlNode *value, xmlNode **el)
{
    size_t nel = 0;
    bool text = false;

    *el = NULL;
    for (xmlNode *k = value->children; k != NULL; k = k->next) {
        if (k->type == XML_ELEMENT_NODE) {
            *el = k;
            nel++;
        } else if ((k->type == XML_TEXT_NODE && !blank(k->content)) ||
                   k->type == XML_CDATA_SECTION_NODE) {
            text = true;
        } else if (k->type != XML_TEXT_NODE && k->type != XML_COMMENT_NODE &&
                   k->type != XML_PI_NODE) {
            return bad(x, "XML-RPC node of an unexpected kind");
        }
    }
    if (nel > 1 || (nel == 1 && text)) {
        return bad(x, "XML-RPC value holding two elements, or text beside one");
    }
    return SUSPECT_OK;
}

/* A parameter's <value> into p. */
static suspect_rc_t read_param(mw_xmlrpc_t *x, xmlNode *value, xr_param_t *p)
{
    xmlNode *el = NULL;
    suspect_rc_t rc = value_el(x, value, &el);

    p->type = T_OTHER;
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (el == NULL || named(el, "string")) {
        p->type = T_TEXT;
        rc = text_of(x, el == NULL ? value : el, &p->text, &p->len);
        /* IXR drops an untyped value that is blank: the next ones move */
        return rc == SUSPECT_OK && el == NULL && blank((xmlChar *)p->text)
                   ? bad(x, "XML-RPC value without a type and blank")
                   : rc;
    }
    if (named(el, "int") || named(el, "i4")) {
        rc = text_of(x, el, &p->text, &p->len);
        if (rc == SUSPECT_OK && !int_text(p->text, &p->len)) {
            rc = bad(x, "XML-RPC int that PHP reads in part");
        }
        p->type = T_TEXT;
        return rc;
    }
    if (!named(el, "boolean") && !named(el, "double") && !named(el, "base64") &&
        !named(el, "dateTime.iso8601") && !named(el, "struct") &&
        !named(el, "array")) {
        /* IXR drops a value of a type it does not know (nil among
         * them): the next ones move */
        return bad(x, "XML-RPC value of an unknown type");
    }
    return SUSPECT_OK;
}

/* A new call at the end of x: NULL when out of memory (*rc set) or over
 * the cap. */
static xr_call_t *call_new(mw_xmlrpc_t *x, suspect_rc_t *rc)
{
    if (x->ncalls == x->max) {
        *rc = SUSPECT_E_RANGE;
        x->why = "XML-RPC body with more calls than maxCalls";
        return NULL;
    }
    if (x->ncalls == x->cap) {
        size_t cap = x->cap == 0 ? 4 : x->cap * 2;
        xr_call_t *nc = suspect_realloc(x->call, cap * sizeof(*nc));

        if (nc == NULL) {
            *rc = SUSPECT_E_NOMEM;
            return NULL;
        }
        x->call = nc;
        x->cap = cap;
    }
    memset(&x->call[x->ncalls], 0, sizeof(x->call[0]));
    return &x->call[x->ncalls++];
}

/* The <value>s of params (the <param>s of <params>, or the <value>s of
 * an array's <data>) into call. */
static suspect_rc_t read_values(mw_xmlrpc_t *x, xmlNode *list, bool wrapped,
                                xr_call_t *call)
{
    xmlNode *cur = list->children, *el = NULL;
    suspect_rc_t rc;

    while ((rc = next_el(x, &cur, &el)) == SUSPECT_OK && el != NULL) {
        xmlNode *value = el;

        if (wrapped) {
            xmlNode *in = el->children, *more = NULL;

            if (!named(el, "param")) {
                return bad(x, "XML-RPC params holding another element");
            }
            rc = next_el(x, &in, &value);
            if (rc == SUSPECT_OK && value != NULL) {
                rc = next_el(x, &in, &more);
            }
            if (rc == SUSPECT_OK &&
                (value == NULL || more != NULL || !named(value, "value"))) {
                rc = bad(x, "XML-RPC param not holding one value");
            }
            if (rc != SUSPECT_OK) {
                return rc;
            }
        } else if (!named(el, "value")) {
            return bad(x, "XML-RPC array holding another element");
        }
        if (call->nparams < MW_XR_MAX_PARAMS) {
            rc = read_param(x, value, &call->param[call->nparams]);
        }
        call->nparams++;
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    return rc;
}

/* A method name's element into call (trimmed). */
static suspect_rc_t read_method(mw_xmlrpc_t *x, xmlNode *el, xr_call_t *call)
{
    suspect_rc_t rc = text_of(x, el, &call->method, &call->method_len);

    if (rc == SUSPECT_OK) {
        trim(call->method, &call->method_len);
    }
    return rc;
}

/* The single element child of n named name, into *out. */
static suspect_rc_t only_child(mw_xmlrpc_t *x, xmlNode *n, const char *name,
                               xmlNode **out)
{
    xmlNode *cur = n->children, *more = NULL;
    suspect_rc_t rc = next_el(x, &cur, out);

    if (rc == SUSPECT_OK && *out != NULL) {
        rc = next_el(x, &cur, &more);
    }
    if (rc == SUSPECT_OK &&
        (*out == NULL || more != NULL || !named(*out, name))) {
        rc = bad(x, "XML-RPC multicall of an unexpected shape");
    }
    return rc;
}

/* One struct of a multicall into a new call. */
static suspect_rc_t read_inner(mw_xmlrpc_t *x, xmlNode *value)
{
    xmlNode *st = NULL, *cur, *m = NULL, *method = NULL, *params = NULL;
    suspect_rc_t rc = value_el(x, value, &st);
    xr_call_t *call;

    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (st == NULL || !named(st, "struct")) {
        return bad(x, "XML-RPC multicall holding a call that is no struct");
    }
    cur = st->children;
    while ((rc = next_el(x, &cur, &m)) == SUSPECT_OK && m != NULL) {
        xmlNode *mc = m->children, *name = NULL, *val = NULL, *more = NULL;
        char *key = NULL;
        size_t key_len = 0;
        xmlNode **place;

        if (!named(m, "member")) {
            return bad(x, "XML-RPC struct holding another element");
        }
        rc = next_el(x, &mc, &name);
        if (rc == SUSPECT_OK && name != NULL) {
            rc = next_el(x, &mc, &val);
        }
        if (rc == SUSPECT_OK && val != NULL) {
            rc = next_el(x, &mc, &more);
        }
        if (rc == SUSPECT_OK &&
            (name == NULL || val == NULL || more != NULL ||
             !named(name, "name") || !named(val, "value"))) {
            rc = bad(x, "XML-RPC member not a name and a value");
        }
        if (rc != SUSPECT_OK) {
            return rc;
        }
        /* IXR trims a member's name and keeps its last copy */
        rc = text_of(x, name, &key, &key_len);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        trim(key, &key_len);
        place = strcmp(key, "methodName") == 0 ? &method
                : strcmp(key, "params") == 0   ? &params
                                               : NULL;
        free(key);
        if (place != NULL && *place != NULL) {
            return bad(x, "XML-RPC multicall member given twice");
        }
        if (place != NULL) {
            *place = val;
        }
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (method == NULL) {
        return bad(x, "XML-RPC multicall call without methodName");
    }
    call = call_new(x, &rc);
    if (call == NULL) {
        return rc;
    }
    rc = value_el(x, method, &m);
    if (rc == SUSPECT_OK && m != NULL && !named(m, "string")) {
        rc = bad(x, "XML-RPC multicall methodName not a string");
    }
    if (rc == SUSPECT_OK) {
        rc = read_method(x, m != NULL ? m : method, call);
    }
    if (rc == SUSPECT_OK && call->method_len == MULTICALL_LEN &&
        memcmp(call->method, MULTICALL, MULTICALL_LEN) == 0) {
        rc = bad(x, "XML-RPC system.multicall inside a multicall");
    }
    if (rc == SUSPECT_OK && params != NULL) {
        xmlNode *arr = NULL, *data = NULL;

        rc = value_el(x, params, &arr);
        if (rc == SUSPECT_OK && (arr == NULL || !named(arr, "array"))) {
            rc = bad(x, "XML-RPC multicall params not an array");
        }
        if (rc == SUSPECT_OK) {
            rc = only_child(x, arr, "data", &data);
        }
        if (rc == SUSPECT_OK) {
            rc = read_values(x, data, false, call);
        }
    }
    return rc;
}

/* The calls of a system.multicall (its params element). */
static suspect_rc_t read_multicall(mw_xmlrpc_t *x, xmlNode *params)
{
    xmlNode *param = NULL, *value = NULL, *arr = NULL, *data = NULL, *cur;
    xmlNode *el = NULL;
    suspect_rc_t rc;

    if (params == NULL) {
        return bad(x, "XML-RPC multicall of an unexpected shape");
    }
    rc = only_child(x, params, "param", &param);
    if (rc == SUSPECT_OK) {
        rc = only_child(x, param, "value", &value);
    }
    if (rc == SUSPECT_OK) {
        rc = value_el(x, value, &arr);
    }
    if (rc == SUSPECT_OK && (arr == NULL || !named(arr, "array"))) {
        rc = bad(x, "XML-RPC multicall of an unexpected shape");
    }
    if (rc == SUSPECT_OK) {
        rc = only_child(x, arr, "data", &data);
    }
    cur = rc == SUSPECT_OK ? data->children : NULL;
    while (rc == SUSPECT_OK && (rc = next_el(x, &cur, &el)) == SUSPECT_OK &&
           el != NULL) {
        rc = named(el, "value")
                 ? read_inner(x, el)
                 : bad(x, "XML-RPC array holding another element");
    }
    return rc;
}

/* The <methodCall> root into x. */
static suspect_rc_t read_root(mw_xmlrpc_t *x, xmlNode *root)
{
    xmlNode *cur = root->children, *el = NULL, *method = NULL, *params = NULL;
    xr_call_t one;
    suspect_rc_t rc;

    if (!named(root, "methodCall")) {
        return bad(x, "XML-RPC body that is not a methodCall");
    }
    while ((rc = next_el(x, &cur, &el)) == SUSPECT_OK && el != NULL) {
        xmlNode **slot = named(el, "methodName") ? &method
                         : named(el, "params")   ? &params
                                                 : NULL;
        if (slot == NULL) {
            return bad(x, "XML-RPC methodCall holding another element");
        }
        if (*slot != NULL) {
            return bad(x, "XML-RPC methodName or params given twice");
        }
        *slot = el;
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (method == NULL) {
        return bad(x, "XML-RPC methodCall without methodName");
    }
    memset(&one, 0, sizeof(one));
    rc = read_method(x, method, &one);
    if (rc == SUSPECT_OK && one.method_len == MULTICALL_LEN &&
        memcmp(one.method, MULTICALL, MULTICALL_LEN) == 0) {
        free(one.method);
        return read_multicall(x, params);
    }
    if (rc == SUSPECT_OK) {
        xr_call_t *c = call_new(x, &rc);
        if (c != NULL) {
            *c = one;
            return params != NULL ? read_values(x, params, true, c)
                                  : SUSPECT_OK;
        }
    }
    free(one.method);
    return rc;
}

void mw_xmlrpc_free(mw_xmlrpc_t *x)
{
    if (x == NULL) {
        return;
    }
    for (size_t i = 0; i < x->ncalls; i++) {
        xr_call_t *c = &x->call[i];
        size_t np =
            c->nparams < MW_XR_MAX_PARAMS ? c->nparams : MW_XR_MAX_PARAMS;
        for (size_t k = 0; k < np; k++) {
            free(c->param[k].text);
        }
        free(c->method);
    }
    free(x->call);
    free(x);
}

/* NULL when body starts as WordPress and libxml2 both read it: blanks,
 * then '<', and "<?xml" nowhere but at its very start (WordPress deletes
 * the first "<?xml...?>" of the first 100 bytes, wherever it is, where
 * libxml2 may read a comment or a value), else why not. */
static const char *bad_head(const char *body, size_t len)
{
    size_t i = 0;

    while (i < len && strchr(" \t\r\n", body[i]) != NULL && body[i] != '\0') {
        i++;
    }
    if (i == len || body[i] != '<') {
        return "XML-RPC body not starting with '<' (a byte order mark?)";
    }
    for (size_t k = 1; k + 5 <= len; k++) {
        if (memcmp(body + k, "<?xml", 5) == 0) {
            return "XML-RPC body with \"<?xml\" after its start";
        }
    }
    return NULL;
}

/* NULL when doc's declared encoding, if any, is UTF-8, which WordPress
 * reads whatever the declaration says (it deletes it), else why not. */
static const char *bad_encoding(const xmlDoc *doc)
{
    const char *e = (const char *)doc->encoding;

    return e == NULL || strcasecmp(e, "UTF-8") == 0
               ? NULL
               : "XML-RPC body declared in another encoding than UTF-8";
}

suspect_rc_t mw_xmlrpc_read(const char *body, size_t len, size_t max_calls,
                            mw_xmlrpc_t **out, const char **why)
{
    mw_xmlrpc_t *x = suspect_calloc(1, sizeof(*x));
    xmlDocPtr doc = NULL;
    suspect_rc_t rc;

    *out = NULL;
    *why = NULL;
    if (x == NULL) {
        return SUSPECT_E_NOMEM;
    }
    x->max = max_calls != 0 ? max_calls : MW_XR_MAX_CALLS_DEFAULT;
    x->why = bad_head(body, len);
    if (x->why != NULL) {
        *why = x->why;
        mw_xmlrpc_free(x);
        return SUSPECT_E_PARSE;
    }
    rc = xmlsafe_parse(body, len, "XML-RPC body", false, &doc, NULL);
    if (rc == SUSPECT_E_NOMEM) {
        mw_xmlrpc_free(x);
        return rc;
    }
    rc = rc != SUSPECT_OK ? bad(x, "XML-RPC body that does not parse")
         : bad_encoding(doc) != NULL ? bad(x, bad_encoding(doc))
                                     : read_root(x, xmlDocGetRootElement(doc));
    xmlFreeDoc(doc);
    if (rc != SUSPECT_OK) {
        *why = x->why;
        mw_xmlrpc_free(x);
        return rc;
    }
    *out = x;
    return SUSPECT_OK;
}

size_t mw_xmlrpc_ncalls(const mw_xmlrpc_t *x)
{
    return x->ncalls;
}

const char *mw_xmlrpc_method(const mw_xmlrpc_t *x, size_t i, size_t *len)
{
    *len = x->call[i].method_len;
    return x->call[i].method;
}

suspect_rc_t mw_xmlrpc_param(const mw_xmlrpc_t *x, size_t i, unsigned pos,
                             const char **v, size_t *len)
{
    const xr_call_t *c = &x->call[i];
    const xr_param_t *p;

    if (pos == 0 || pos > c->nparams || pos > MW_XR_MAX_PARAMS) {
        return SUSPECT_E_NOTFOUND;
    }
    p = &c->param[pos - 1];
    if (p->type != T_TEXT) {
        return SUSPECT_E_INVAL;
    }
    *v = p->text;
    *len = p->len;
    return SUSPECT_OK;
}
