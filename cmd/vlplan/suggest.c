/* cmd/vlplan/suggest.c -- "did you mean" for mistyped commands and options: the
 * candidate nearest by edit distance, when it is near enough to be a typo. */
#include <string.h>

#include "cli.h"

/* Levenshtein distance; words of 31 bytes or more count as far from everything. */
size_t cli_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), prev[32], cur[32];

    if (la >= 31 || lb >= 31)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof cur);
    }
    return prev[lb];
}

/* Near enough to be a typo: at most 2 edits, and fewer than the word is long. */
static size_t typo_limit(const char *word)
{
    size_t n = strlen(word);
    return n < 3 ? n : 3;
}

const char *cli_nearest_option(const char *arg, const cli_opt *t)
{
    char word[32];
    const char *best = NULL;
    size_t n, bestd;

    while (*arg == '-')
        arg++;
    n = strcspn(arg, "=");
    if (n == 0 || n >= sizeof word)
        return NULL;
    memcpy(word, arg, n);
    word[n] = '\0';
    bestd = typo_limit(word);
    for (; t->name; t++) {
        size_t d = cli_edit_distance(word, t->name);
        /* a prefix of an option is what getopt calls ambiguous: name the first */
        if (strncmp(t->name, word, n) == 0 && n < strlen(t->name))
            d = 1;
        if (d < bestd) {
            bestd = d;
            best = t->name;
        }
    }
    return best;
}
