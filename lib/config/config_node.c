/* lib/config/config_node.c -- the YAML node tree the config code works on, so that only
 * config_yaml.c sees libyaml: allocation, copy, lookup and merge. */
#include <stdlib.h>
#include <string.h>

#include "config_impl.h"

vl_ynode *vl__ynode_new(vl_ykind kind, int line, int col)
{
    vl_ynode *n = calloc(1, sizeof *n);

    if (n == NULL)
        return NULL;
    n->kind = kind;
    n->line = line;
    n->col = col;
    return n;
}

vl_ynode *vl__ynode_scalar(const char *text, size_t len, bool quoted, int line, int col)
{
    vl_ynode *n = vl__ynode_new(VL_YSCALAR, line, col);

    if (n == NULL)
        return NULL;
    n->text = malloc(len + 1);
    if (n->text == NULL) {
        free(n);
        return NULL;
    }
    memcpy(n->text, text, len);
    n->text[len] = '\0';
    n->quoted = quoted;
    return n;
}

int vl__ynode_push(vl_ynode *parent, vl_ynode *kid)
{
    if (parent->n == parent->cap) {
        size_t cap = parent->cap ? parent->cap * 2 : 8;
        vl_ynode **k = realloc(parent->kids, cap * sizeof *k);
        if (k == NULL)
            return -1;
        parent->kids = k;
        parent->cap = cap;
    }
    parent->kids[parent->n++] = kid;
    return 0;
}

void vl__ynode_free(vl_ynode *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->n; i++)
        vl__ynode_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

vl_ynode *vl__ynode_copy(const vl_ynode *n, size_t *budget)
{
    vl_ynode *c;

    if (*budget == 0)
        return NULL;
    (*budget)--;
    if (n->kind == VL_YSCALAR) {
        return vl__ynode_scalar(n->text, strlen(n->text), n->quoted, n->line, n->col);
    }
    c = vl__ynode_new(n->kind, n->line, n->col);
    if (c == NULL)
        return NULL;
    c->flow = n->flow;
    for (size_t i = 0; i < n->n; i++) {
        vl_ynode *k = vl__ynode_copy(n->kids[i], budget);
        if (k == NULL || vl__ynode_push(c, k) != 0) {
            vl__ynode_free(k);
            vl__ynode_free(c);
            return NULL;
        }
    }
    return c;
}

size_t vl__ynode_depth(const vl_ynode *n)
{
    size_t d = 0;

    for (size_t i = 0; i < n->n; i++) {
        size_t k = vl__ynode_depth(n->kids[i]);
        if (k > d)
            d = k;
    }
    return d + 1;
}

vl_ynode *vl__ymap_get(const vl_ynode *map, const char *key)
{
    if (map == NULL || map->kind != VL_YMAP)
        return NULL;
    for (size_t i = 0; i + 1 < map->n; i += 2)
        if (map->kids[i]->kind == VL_YSCALAR && strcmp(map->kids[i]->text, key) == 0)
            return map->kids[i + 1];
    return NULL;
}

bool vl__ynode_is_null(const vl_ynode *n)
{
    if (n == NULL)
        return true;
    if (n->kind != VL_YSCALAR || n->quoted)
        return false;
    return strcmp(n->text, "") == 0 || strcmp(n->text, "~") == 0 ||
           strcmp(n->text, "null") == 0 || strcmp(n->text, "Null") == 0 ||
           strcmp(n->text, "NULL") == 0;
}

static int push_pair_copy(vl_ynode *into, const vl_ynode *k, const vl_ynode *v)
{
    size_t budget = (size_t)-1;
    vl_ynode *kc = vl__ynode_copy(k, &budget);
    vl_ynode *vc = kc ? vl__ynode_copy(v, &budget) : NULL;

    if (vc == NULL || vl__ynode_push(into, kc) != 0) {
        vl__ynode_free(kc);
        vl__ynode_free(vc);
        return -1;
    }
    if (vl__ynode_push(into, vc) != 0) {
        into->n--; /* drop the key pushed above */
        vl__ynode_free(kc);
        vl__ynode_free(vc);
        return -1;
    }
    return 0;
}

int vl__ynode_merge(vl_ynode *into, const vl_ynode *from)
{
    for (size_t i = 0; i + 1 < from->n; i += 2) {
        const vl_ynode *k = from->kids[i], *v = from->kids[i + 1];
        size_t j;

        for (j = 0; j + 1 < into->n; j += 2)
            if (strcmp(into->kids[j]->text, k->text) == 0)
                break;
        if (j + 1 >= into->n) {
            if (push_pair_copy(into, k, v) != 0)
                return -1;
        } else if (into->kids[j + 1]->kind == VL_YMAP && v->kind == VL_YMAP) {
            if (vl__ynode_merge(into->kids[j + 1], v) != 0)
                return -1;
        } else {
            size_t budget = (size_t)-1;
            vl_ynode *vc = vl__ynode_copy(v, &budget);
            if (vc == NULL)
                return -1;
            vl__ynode_free(into->kids[j + 1]);
            into->kids[j + 1] = vc;
        }
    }
    return 0;
}

void vl__ydoc_free(vl_ydoc *d)
{
    if (d == NULL)
        return;
    vl__ynode_free(d->root);
    free(d->name);
    free(d);
}
