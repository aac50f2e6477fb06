/*
 * util.c - helpers for the test suites: data paths, temp dirs, files, keys.
 */
#include "util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *test_data_path(char path[TEST_PATH_MAX], const char *rel)
{
    const char *base = getenv("SUSPECT_TEST_DATA");

    snprintf(path, TEST_PATH_MAX, "%s/%s", base != NULL ? base : "tests/data",
             rel);
    return path;
}

char *test_mkdtemp(void)
{
    const char *tmp = getenv("TMPDIR");
    char templ[4096];
    snprintf(templ, sizeof(templ), "%s/suspect-test-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(templ) == NULL) {
        return NULL;
    }
    return strdup(templ);
}

void test_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    struct stat st;

    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            test_rmtree(path);
        } else {
            unlink(path);
        }
    }
    closedir(d);
    rmdir(dir);
}

int test_write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return -1;
    }
    if (len > 0 && fwrite(data, 1, len, f) != len) {
        fclose(f);
        return -1;
    }
    return fclose(f) == 0 ? 0 : -1;
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t used = 0, cap = 0, n;

    if (f == NULL) {
        return NULL;
    }
    do {
        if (cap - used < 4096) {
            char *grown = realloc(buf, cap + 65536);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
            cap += 65536;
        }
        n = fread(buf + used, 1, cap - used - 1, f);
        used += n;
    } while (n > 0);
    fclose(f);
    buf[used] = '\0';
    if (len != NULL) {
        *len = used;
    }
    return buf;
}

int test_count_lines(const char *path, const char *line)
{
    size_t len = strlen(line);
    char *text = test_read_file(path, NULL);
    int n = 0;

    for (const char *p = text; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t l = nl != NULL ? (size_t)(nl - p) : strlen(p);

        n += l == len && memcmp(p, line, len) == 0;
        p = nl != NULL ? nl + 1 : p + l;
    }
    free(text);
    return n;
}

int test_count_text(const char *path, const char *text)
{
    char *log = test_read_file(path, NULL);
    int n = 0;

    for (const char *p = log; p != NULL && (p = strstr(p, text)) != NULL;
         p += strlen(text)) {
        n++;
    }
    free(log);
    return n;
}

suspect_identity_t test_identity(const char *type, const char *value)
{
    suspect_identity_t id;
    memset(&id, 0, sizeof(id));
    id.type = type;
    id.nparts = 1;
    id.part[0].ptr = value;
    id.part[0].len = strlen(value);
    return id;
}

suspect_key_t test_key(const char *action, const char *value)
{
    suspect_identity_t id = test_identity("Id", value);
    suspect_key_t key;
    if (suspect_key_build(NULL, action, &id, &key, NULL) != SUSPECT_OK) {
        fprintf(stderr, "test_key: cannot build %s:%s\n", action, value);
        abort();
    }
    return key;
}
