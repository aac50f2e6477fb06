/*
 * conf_texts.c - rules of text values that elements of several files
 * share (conf_internal.h): a key (<Log identityKey>, <DeviceCookie key>,
 * <Challenge key>) and the name of a cookie Suspect sets (<DeviceCookie
 * name>, <Challenge name>).  Tables only: the setters are conf_values.c's.
 */
#include "conf_internal.h"

const conf_text_t conf_secret_text = {
    256, NULL, 0, 0, NULL, NULL, "must be printable ASCII without spaces"};

const conf_text_t conf_cookie_name_text = {
    64,
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
    0,
    0,
    NULL,
    NULL,
    "must be letters, digits, '_' and '-'"};
