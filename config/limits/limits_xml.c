/*
 * limits_xml.c - the limits document, from XML to rules.  With xmlsafe.c,
 * the only file of libsuspect that includes libxml2.
 *
 * Parsing is xmlsafe.h's, shared with suspect.xml: a private parser
 * context per call, no network, any DTD refused before a declaration is
 * read (so no entity is ever declared, expanded or fetched), libxml2's
 * first error kept with its line.
 *
 * Walking: the root must be <ArrayOfSuspectUsageSettingEntity>; each child
 * <SuspectUsageSettingEntity> gives one rule, its fields as attributes (the
 * seed's form) or as child elements (XmlSerializer's form), one table of
 * fields driving both.  Names are compared by local name, so a namespace
 * prefix does not matter.  The walk stops at the first error; warnings go
 * on the snapshot.  Values are trimmed of XML white space and numbers are
 * parsed digit by digit with overflow checks.
 *
 * Unknown names: .NET's XmlSerializer ignores attributes and elements it
 * does not know, and so does this loader (with a warning), so a file
 * written for a newer version still loads.  A name that is near a known
 * one (near.h: "BlockDuraton", "limitcount", "SuspectUsageSettingEntitiy")
 * is an error instead: ignoring it would silently drop a lock-out, a
 * limit or a whole action.
 */
#include "limits_internal.h"
#include "near.h"
#include "show.h"
#include "xmlsafe.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#define ROOT_NAME   "ArrayOfSuspectUsageSettingEntity"
#define ENTITY_NAME "SuspectUsageSettingEntity"
#define XSI_NS      "http://www.w3.org/2001/XMLSchema-instance"

enum {
    F_ACTION,
    F_COUNT,
    F_WINDOW,
    F_BLOCK,
    F_FACTOR, /* a decimal, kept in hundredths */
    F_BLOCK_MAX,
    F_OFFENCE,
    F_COUNT_ALL
};

/* One field of an entity: its name and accepted range. */
typedef struct field_def {
    const char *name;
    uint32_t min; /* smallest number; 0 also for Action */
    uint32_t max; /* largest number; 0 for Action */
} field_def_t;

static const field_def_t fields[F_COUNT_ALL] = {
    {"Action", 0, 0},
    {"LimitCount", 1, SUSPECT_LIMIT_COUNT_MAX},
    {"LimitDuration", 1, SUSPECT_DURATION_MAX},
    {"BlockDuration", 0, SUSPECT_DURATION_MAX},
    {"BlockFactor", 100, SUSPECT_FACTOR_MAX_PCT},
    {"MaxBlockDuration", 1, SUSPECT_DURATION_MAX},
    {"OffenceDuration", 1, SUSPECT_DURATION_MAX},
};

/* A field as found in one entity. */
typedef struct field_val {
    int given;     /* seen as an attribute or an element */
    int line;      /* line to blame in messages */
    xmlChar *text; /* owned (xmlFree); NULL when absent, empty or nil */
} field_val_t;

/* True for the XML white space characters. */
static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Trims text (may be NULL) into (*p, *n). */
static void trim(const xmlChar *text, const char **p, size_t *n)
{
    const char *s = text != NULL ? (const char *)text : "";
    size_t len = strlen(s);

    while (len > 0 && is_space(*s)) {
        s++;
        len--;
    }
    while (len > 0 && is_space(s[len - 1])) {
        len--;
    }
    *p = s;
    *n = len;
}

/* True when attr is xsi:something, which XmlSerializer may write anywhere. */
static int is_xsi(const xmlAttr *attr)
{
    return attr->ns != NULL && attr->ns->href != NULL &&
           strcmp((const char *)attr->ns->href, XSI_NS) == 0;
}

/* The field called name, or -1. */
static int field_index(const xmlChar *name)
{
    for (int i = 0; i < F_COUNT_ALL; i++) {
        if (strcmp((const char *)name, fields[i].name) == 0) {
            return i;
        }
    }
    return -1;
}

/* The known field nearest to name (near.h), or NULL. */
static const char *near_field(const xmlChar *name)
{
    const char *names[F_COUNT_ALL];

    for (int i = 0; i < F_COUNT_ALL; i++) {
        names[i] = fields[i].name;
    }
    return config_near((const char *)name, names, F_COUNT_ALL);
}

/* The error for a name near a known one: "owner: unknown attribute
 * 'BlockDuraton' (did you mean 'BlockDuration'?)", or for an element
 * "unknown element <X> (did you mean <Y>?)". */
static suspect_rc_t near_error(const suspect_limits_t *lim, int line,
                               const char *owner, bool element,
                               const xmlChar *name, const char *known,
                               suspect_err_t *err)
{
    const char *open = element ? "<" : "'";
    const char *close = element ? ">" : "'";

    return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                           "%s: unknown %s %s%.64s%s (did you mean %s%s%s?); "
                           "it would be ignored",
                           owner, element ? "element" : "attribute", open,
                           (const char *)name, close, open, known, close);
}

/* Warns "owner: unknown attribute 'x' ignored", with its prefix if any. */
static suspect_rc_t warn_attr(suspect_limits_t *lim, const char *owner,
                              const xmlAttr *attr, int line)
{
    const char *prefix = attr->ns != NULL && attr->ns->prefix != NULL
                             ? (const char *)attr->ns->prefix
                             : NULL;
    return limits_add_warning(lim, line,
                              "%s: unknown attribute '%s%s%s' "
                              "ignored",
                              owner, prefix != NULL ? prefix : "",
                              prefix != NULL ? ":" : "",
                              (const char *)attr->name);
}

/* Reports that libxml2 or we ran out of memory. */
static suspect_rc_t nomem(const suspect_limits_t *lim, int line,
                          suspect_err_t *err)
{
    return suspect_err_set(err, SUSPECT_E_NOMEM, lim->name, line,
                           "out of memory");
}

/* True when the xsi:nil value v means true. */
static int nil_true(const xmlChar *v)
{
    const char *p;
    size_t n;

    trim(v, &p, &n);
    return (n == 4 && memcmp(p, "true", 4) == 0) || (n == 1 && p[0] == '1');
}

/* Reads the attributes of a field element: xsi:nil, else warnings. */
static suspect_rc_t field_elem_attrs(xmlNodePtr el, const char *name, int *nil,
                                     suspect_limits_t *lim, int line,
                                     suspect_err_t *err)
{
    for (xmlAttrPtr a = el->properties; a != NULL; a = a->next) {
        if (is_xsi(a) && strcmp((const char *)a->name, "nil") == 0) {
            xmlChar *v = xmlNodeListGetString(el->doc, a->children, 1);
            *nil = nil_true(v);
            xmlFree(v);
        } else if (!is_xsi(a) && warn_attr(lim, name, a, line) != 0) {
            return nomem(lim, line, err);
        }
    }
    return SUSPECT_OK;
}

/* Concatenates the text and CDATA children of el into *text (NULL when
 * there are none); an element inside is an error. */
static suspect_rc_t field_elem_text(xmlNodePtr el, const char *name,
                                    xmlChar **text, suspect_limits_t *lim,
                                    int line, suspect_err_t *err)
{
    for (xmlNodePtr c = el->children; c != NULL; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) {
            return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name,
                                   (int)xmlGetLineNo(c),
                                   "%s: unexpected element <%.64s> inside",
                                   name, (const char *)c->name);
        }
        if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) {
            continue;
        }
        *text = xmlStrcat(*text, c->content);
        if (*text == NULL) {
            return nomem(lim, line, err);
        }
    }
    return SUSPECT_OK;
}

/* Reads a field given as a child element: <LimitCount>2</LimitCount>;
 * an empty or xsi:nil="true" element leaves the field absent. */
static suspect_rc_t read_field_elem(xmlNodePtr el, int f, field_val_t *val,
                                    suspect_limits_t *lim, suspect_err_t *err)
{
    const char *name = fields[f].name;
    int line = (int)xmlGetLineNo(el);
    int nil = 0;
    const char *p;
    size_t n;
    suspect_rc_t rc;

    if (val->given) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: given twice", name);
    }
    val->given = 1;
    val->line = line;
    rc = field_elem_attrs(el, name, &nil, lim, line, err);
    if (rc == SUSPECT_OK) {
        rc = field_elem_text(el, name, &val->text, lim, line, err);
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    trim(val->text, &p, &n);
    if (nil && n > 0) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: xsi:nil=\"true\" but has a value", name);
    }
    return SUSPECT_OK;
}

/* Reads the attributes of an entity into vals; warns about unknown ones. */
static suspect_rc_t read_entity_attrs(xmlNodePtr el, field_val_t *vals,
                                      suspect_limits_t *lim, int line,
                                      suspect_err_t *err)
{
    for (xmlAttrPtr a = el->properties; a != NULL; a = a->next) {
        int f = a->ns == NULL ? field_index(a->name) : -1;
        const char *near = a->ns == NULL && f < 0 ? near_field(a->name) : NULL;

        if (near != NULL) {
            return near_error(lim, line, ENTITY_NAME, false, a->name, near,
                              err);
        }
        if (f < 0) {
            if (!is_xsi(a) && warn_attr(lim, ENTITY_NAME, a, line) != 0) {
                return nomem(lim, line, err);
            }
            continue;
        }
        vals[f].given = 1;
        vals[f].text = xmlNodeListGetString(el->doc, a->children, 1);
        if (vals[f].text == NULL && a->children != NULL) {
            return nomem(lim, line, err);
        }
    }
    return SUSPECT_OK;
}

/* Reads the child elements of an entity into vals; warns about others. */
static suspect_rc_t read_entity_elems(xmlNodePtr el, field_val_t *vals,
                                      suspect_limits_t *lim, suspect_err_t *err)
{
    for (xmlNodePtr c = el->children; c != NULL; c = c->next) {
        suspect_rc_t rc;
        int f;
        if (c->type != XML_ELEMENT_NODE) {
            continue;
        }
        f = field_index(c->name);
        if (f < 0 && near_field(c->name) != NULL) {
            return near_error(lim, (int)xmlGetLineNo(c), ENTITY_NAME, true,
                              c->name, near_field(c->name), err);
        }
        if (f < 0) {
            if (limits_add_warning(lim, (int)xmlGetLineNo(c),
                                   "%s: unknown element <%.64s> ignored",
                                   ENTITY_NAME, (const char *)c->name) != 0) {
                return nomem(lim, (int)xmlGetLineNo(c), err);
            }
            continue;
        }
        rc = read_field_elem(c, f, &vals[f], lim, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    return SUSPECT_OK;
}

/*
 * Parses the decimal digits of (p, n) into *out within the field's range.
 * Only [0-9]+ is a number: no sign, base prefix, exponent or inner space.
 */
static suspect_rc_t parse_number(int f, const char *p, size_t n, int line,
                                 uint32_t *out, const suspect_limits_t *lim,
                                 suspect_err_t *err)
{
    const field_def_t *def = &fields[f];
    char shown[CONFIG_SHOW_SIZE];
    int negative = n > 0 && p[0] == '-';
    size_t start = negative ? 1 : 0;
    int digits = n > start; /* only digits after the optional '-' */
    int overflow = 0;
    uint64_t v = 0;

    for (size_t i = start; i < n && digits; i++) {
        digits = p[i] >= '0' && p[i] <= '9';
        /* Stops early; anything this big is out of range anyway. */
        overflow |= v > (UINT64_MAX - 9) / 10;
        if (digits && !overflow) {
            v = v * 10 + (uint64_t)(p[i] - '0');
        }
    }
    config_show(shown, sizeof(shown), p, n);
    if (!digits) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: '%s' is not a number", def->name, shown);
    }
    if (negative) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: '%s' is negative", def->name, shown);
    }
    if (overflow || v > def->max) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: %s is out of range (at most %u)", def->name,
                               shown, (unsigned)def->max);
    }
    if (v < def->min) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: must be at least %u (got %u)", def->name,
                               (unsigned)def->min, (unsigned)v);
    }
    *out = (uint32_t)v;
    return SUSPECT_OK;
}

/*
 * Parses BlockFactor (p, n): digits, optionally '.' and one or two more,
 * into hundredths within the field's range (1 to 100).
 */
static suspect_rc_t parse_factor(const char *p, size_t n, int line,
                                 uint32_t *out, const suspect_limits_t *lim,
                                 suspect_err_t *err)
{
    const field_def_t *def = &fields[F_FACTOR];
    char shown[CONFIG_SHOW_SIZE];
    size_t dot = 0, i;
    uint64_t v = 0;
    unsigned decimals = 0;

    while (dot < n && p[dot] != '.') {
        dot++;
    }
    for (i = 0; i < n && v <= SUSPECT_FACTOR_MAX_PCT; i++) {
        if (i == dot) {
            continue;
        }
        if (p[i] < '0' || p[i] > '9' || (i > dot && ++decimals > 2)) {
            v = UINT64_MAX;
            break;
        }
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    config_show(shown, sizeof(shown), p, n);
    if (v == UINT64_MAX || dot == 0 || (dot < n && decimals == 0)) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: '%s' is not a number such as 2 or 1.5",
                               def->name, shown);
    }
    v *= decimals == 0 ? 100 : decimals == 1 ? 10 : 1;
    if (v < def->min || v > def->max) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "%s: '%s' is out of range (1 to 100)", def->name,
                               shown);
    }
    *out = (uint32_t)v;
    return SUSPECT_OK;
}

/* Checks the action name (p, n) given at line. */
static suspect_rc_t check_action(const char *p, size_t n, int line,
                                 const suspect_limits_t *lim,
                                 suspect_err_t *err)
{
    char shown[CONFIG_SHOW_SIZE];

    if (n == 0) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "Action: missing");
    }
    if (!suspect_name_valid(p, n)) {
        return suspect_err_set(
            err, SUSPECT_E_CONFIG, lim->name, line,
            "Action: '%s' is not a valid action name (a letter or '_', "
            "then letters, digits, '_', '-', '.'; at most %d)",
            config_show(shown, sizeof(shown), p, n), SUSPECT_ACTION_MAX);
    }
    return SUSPECT_OK;
}

/* Checks the fields of one entity (in table order) and adds its rule. */
static suspect_rc_t make_rule(const field_val_t *vals, int line,
                              suspect_limits_t *lim, suspect_err_t *err)
{
    suspect_rule_t rule = {NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    uint32_t *num[F_COUNT_ALL] = {
        NULL,           &rule.limit_count,      &rule.window_s,
        &rule.block_s,  &rule.block_factor_pct, &rule.block_max_s,
        &rule.offence_s};
    int lines[F_COUNT_ALL] = {0};
    const char *action, *p;
    size_t action_len, n;
    suspect_rc_t rc;

    trim(vals[F_ACTION].text, &action, &action_len);
    rc = check_action(action, action_len, vals[F_ACTION].line, lim, err);
    for (int f = F_COUNT; f < F_COUNT_ALL && rc == SUSPECT_OK; f++) {
        trim(vals[f].text, &p, &n);
        lines[f] = vals[f].line;
        if (n == 0 && fields[f].min > 0 && f <= F_WINDOW) {
            rc = suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, vals[f].line,
                                 "%s: missing", fields[f].name);
        } else if (n > 0 && f == F_FACTOR) {
            rc = parse_factor(p, n, vals[f].line, num[f], lim, err);
        } else if (n > 0) {
            rc = parse_number(f, p, n, vals[f].line, num[f], lim, err);
        }
    }
    if (rc == SUSPECT_OK) {
        rc = limits_escalation_check(lim, &rule, lines[F_FACTOR],
                                     lines[F_BLOCK_MAX], lines[F_OFFENCE], true,
                                     err);
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    return limits_add_rule(lim, action, action_len, &rule, line, err);
}

/* One <SuspectUsageSettingEntity>: attributes, then child elements. */
static suspect_rc_t parse_entity(xmlNodePtr el, suspect_limits_t *lim,
                                 suspect_err_t *err)
{
    field_val_t vals[F_COUNT_ALL];
    int line = (int)xmlGetLineNo(el);
    suspect_rc_t rc;

    memset(vals, 0, sizeof(vals));
    for (int f = 0; f < F_COUNT_ALL; f++) {
        vals[f].line = line;
    }
    rc = read_entity_attrs(el, vals, lim, line, err);
    if (rc == SUSPECT_OK) {
        rc = read_entity_elems(el, vals, lim, err);
    }
    if (rc == SUSPECT_OK) {
        rc = make_rule(vals, line, lim, err);
    }
    for (int f = 0; f < F_COUNT_ALL; f++) {
        xmlFree(vals[f].text);
    }
    return rc;
}

/* Warns about the root's attributes other than xsi:* (xmlns declarations
 * are not attributes in libxml2's tree, so they never show up here). */
static suspect_rc_t check_root_attrs(xmlNodePtr root, suspect_limits_t *lim,
                                     suspect_err_t *err)
{
    int line = (int)xmlGetLineNo(root);

    for (xmlAttrPtr a = root->properties; a != NULL; a = a->next) {
        if (!is_xsi(a) && warn_attr(lim, ROOT_NAME, a, line) != 0) {
            return nomem(lim, line, err);
        }
    }
    return SUSPECT_OK;
}

/* The root element and its entities, in document order. */
static suspect_rc_t walk_root(xmlNodePtr root, size_t max_rules,
                              suspect_limits_t *lim, suspect_err_t *err)
{
    int line = (int)xmlGetLineNo(root);
    size_t entities = 0;
    suspect_rc_t rc;

    if (strcmp((const char *)root->name, ROOT_NAME) != 0) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, line,
                               "root element is <%.64s>, expected <%s>",
                               (const char *)root->name, ROOT_NAME);
    }
    rc = check_root_attrs(root, lim, err);
    for (xmlNodePtr c = root->children; c != NULL && rc == 0; c = c->next) {
        int cline = (int)xmlGetLineNo(c);
        if (c->type != XML_ELEMENT_NODE) {
            continue;
        }
        if (strcmp((const char *)c->name, ENTITY_NAME) != 0) {
            static const char *const entity[] = {ENTITY_NAME};

            if (config_near((const char *)c->name, entity, 1) != NULL) {
                return near_error(lim, cline, ROOT_NAME, true, c->name,
                                  ENTITY_NAME, err);
            }
            if (limits_add_warning(lim, cline,
                                   "unknown element <%.64s> "
                                   "ignored",
                                   (const char *)c->name) != 0) {
                return nomem(lim, cline, err);
            }
            continue;
        }
        if (++entities > max_rules) {
            return suspect_err_set(err, SUSPECT_E_CONFIG, lim->name, cline,
                                   "too many %s elements (at most %zu)",
                                   ENTITY_NAME, max_rules);
        }
        rc = parse_entity(c, lim, err);
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (entities == 0 &&
        limits_add_warning(lim, line, "no %s: nothing is limited",
                           ENTITY_NAME) != 0) {
        return nomem(lim, line, err);
    }
    return SUSPECT_OK;
}

/* Parses buf (xmlsafe.h) and walks it into lim. */
suspect_rc_t limits_xml_parse(const char *buf, size_t len, size_t max_rules,
                              suspect_limits_t *lim, suspect_err_t *err)
{
    xmlDocPtr doc;
    suspect_rc_t rc = xmlsafe_parse(buf, len, lim->name, false, &doc, err);

    if (rc == SUSPECT_OK) {
        rc = walk_root(xmlDocGetRootElement(doc), max_rules, lim, err);
    }
    xmlFreeDoc(doc);
    return rc;
}
