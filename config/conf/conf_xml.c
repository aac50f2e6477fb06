/*
 * conf_xml.c - suspect.xml from XML to a snapshot, driven by the element
 * tables.  With xmlsafe.c, the only file of the loader that includes
 * libxml2.
 *
 * Parsing is xmlsafe.h's, shared with the limits file: a private parser
 * context, any DTD refused before a declaration is read, libxml2's first
 * error kept with its line, and elements reported at the line of their
 * '<', so an element written over several lines is named by its first.
 *
 * Walking: walk() knows no element by name.  For an element and its table
 * row it calls the begin hook, then each attribute's setter, checks the
 * required attributes, walks the child elements against the row's child
 * table (a second CONF_SINGLE child is an error naming the first's line),
 * and calls the end hook with the set of attributes seen.  A name no row
 * knows is an error, with "did you mean" when it is near a known one
 * (near.h); only attributes in a namespace (an editor's
 * xsi:schemaLocation) are ignored, with a warning.  Names
 * are compared by local name, so a namespace prefix does not matter.
 * Attribute values are trimmed of XML white space before the setter sees
 * them.  Attributes have no line of their own in libxml2: messages give
 * their element's line.
 */
#include "conf_internal.h"
#include "near.h"
#include "xmlsafe.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#define MAX_CHILD_DEFS 32

/* True for the XML white space characters. */
static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The row of table named name, or -1; *near is the row whose name is
 * near it (near.h), or -1. */
static int find_attr(const conf_attr_t *table, const char *name, int *near)
{
    const char *names[64];
    const char *hint;
    size_t n = 0;

    *near = -1;
    for (int i = 0; table[i].name != NULL; i++) {
        if (strcmp(table[i].name, name) == 0) {
            return i;
        }
        if (n < sizeof(names) / sizeof(names[0])) {
            names[n++] = table[i].name;
        }
    }
    hint = config_near(name, names, n);
    for (int i = 0; hint != NULL && table[i].name != NULL; i++) {
        if (table[i].name == hint) {
            *near = i;
        }
    }
    return -1;
}

/* As find_attr(), for child element rows. */
static int find_child(const conf_elem_t *const *table, const char *name,
                      int *near)
{
    const char *names[MAX_CHILD_DEFS];
    const char *hint;
    size_t n = 0;

    *near = -1;
    for (int i = 0; table != NULL && table[i] != NULL; i++) {
        if (strcmp(table[i]->name, name) == 0) {
            return i;
        }
        if (n < MAX_CHILD_DEFS) {
            names[n++] = table[i]->name;
        }
    }
    hint = config_near(name, names, n);
    for (int i = 0; hint != NULL && table[i] != NULL; i++) {
        if (table[i]->name == hint) {
            *near = i;
        }
    }
    return -1;
}

/* An attribute of ours that no row describes: an error, with a hint when
 * it is near a known one.  suspect.xml is Suspect's own file, so a name
 * it does not know can only be a mistake ("BlockDuraton", "mising") or a
 * setting of a newer version, and ignoring either could turn protection
 * off without a word. */
static suspect_rc_t unknown_attr(conf_build_t *b, const conf_elem_t *def,
                                 const xmlAttr *attr, const char *hint,
                                 int line)
{
    return conf_fail(b, line, "%s: unknown attribute '%.64s'%s%s%s", def->name,
                     (const char *)attr->name,
                     hint != NULL ? " (did you mean '" : "",
                     hint != NULL ? hint : "", hint != NULL ? "'?)" : "");
}

/* Warns about an attribute in a namespace (xsi:schemaLocation, an
 * editor's): not ours, so ignored. */
static suspect_rc_t warn_attr(conf_build_t *b, const conf_elem_t *def,
                              const xmlAttr *attr, int line)
{
    return conf_warn(b, line, "%s: unknown attribute '%s:%.64s' ignored",
                     def->name, (const char *)attr->ns->prefix,
                     (const char *)attr->name);
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

    if (i < 0 && attr->ns != NULL && attr->ns->prefix != NULL) {
        return warn_attr(b, def, attr, line);
    }
    if (i < 0) {
        return unknown_attr(b, def, attr,
                            near >= 0 ? def->attrs[near].name : NULL, line);
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

/* An element child of a parent of row def that no row describes: an
 * error (as for attributes, see unknown_attr()), with a hint when it is
 * near a known one, else listing what is allowed. */
static suspect_rc_t unknown_child(conf_build_t *b, const conf_elem_t *def,
                                  const xmlNode *c, int near)
{
    char allowed[256];
    size_t used = 0;

    if (near >= 0) {
        return conf_fail(b, xmlsafe_line(c),
                         "%s: unknown element <%.64s> (did you mean <%s>?)",
                         def->name, (const char *)c->name,
                         def->children[near]->name);
    }
    allowed[0] = '\0';
    for (int i = 0; def->children != NULL && def->children[i] != NULL &&
                    used < sizeof(allowed);
         i++) {
        int w = snprintf(allowed + used, sizeof(allowed) - used, "%s<%s>",
                         i > 0 ? ", " : "", def->children[i]->name);
        used += w > 0 ? (size_t)w : 0;
    }
    if (used == 0) {
        return conf_fail(b, xmlsafe_line(c),
                         "%s: unknown element <%.64s> (it holds no element)",
                         def->name, (const char *)c->name);
    }
    return conf_fail(b, xmlsafe_line(c),
                     "%s: unknown element <%.64s> (it may only hold %s)",
                     def->name, (const char *)c->name, allowed);
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
            rc = conf_fail(b, xmlsafe_line(c),
                           "<%s> given twice (first on line %d)",
                           def->children[i]->name, first[i]);
        } else {
            first[i] = xmlsafe_line(c);
            rc = walk(b, def->children[i], c, obj);
        }
    }
    return rc;
}

/* One element: begin, line, attributes, children, end. */
static suspect_rc_t walk(conf_build_t *b, const conf_elem_t *def, xmlNodePtr el,
                         void *obj)
{
    int line = xmlsafe_line(el);
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

/* Parses buf (xmlsafe.h) and walks it from the root. */
suspect_rc_t conf_xml_parse(const char *buf, size_t len, conf_build_t *b)
{
    xmlDocPtr doc;
    xmlNodePtr root;
    suspect_rc_t rc =
        xmlsafe_parse(buf, len, b->conf->file, true, &doc, b->err);

    if (rc == SUSPECT_OK) {
        root = xmlDocGetRootElement(doc);
        if (strcmp((const char *)root->name, conf_root.name) != 0) {
            rc = conf_fail(b, xmlsafe_line(root),
                           "root element is <%.64s>, expected <%s>",
                           (const char *)root->name, conf_root.name);
        } else {
            rc = walk(b, &conf_root, root, b->conf);
        }
    }
    xmlFreeDoc(doc);
    return rc;
}
