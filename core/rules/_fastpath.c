/* The ingest's two inner loops in C: parsing a batch's offers (core/rules/parse_batch.py
 * ``parse_all``) and deciding its first arrivals and exact re-sends (core/rules/batch.py
 * ``BatchState.decide_all``). Each is a line-for-line copy of the Python loop it replaces, which
 * stays the definition: anything this code is not sure of (a line not in the common form, an id
 * whose sequence disagrees, any verdict but the two common ones) goes back to the Python code it
 * was handed. tests/test_fast_path_differential.py holds both equal to the reference.
 *
 * Optional: where no C compiler is found, the build skips it and the Python loops run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static uint32_t crc_table[256];

static void make_table(void)
{
    for (uint32_t byte = 0; byte < 256; byte++) {
        uint32_t crc = byte << 24;
        for (int i = 0; i < 8; i++)
            crc = (crc & 0x80000000u) ? (crc << 1) ^ 0x04C11DB7u : (crc << 1);
        crc_table[byte] = crc;
    }
}

/* POSIX cksum of ``data``, as core/rules/cksum.py ``cksum_reference``: MSB-first from zero, then
 * the length least significant byte first, then inverted. */
static uint32_t cksum(const unsigned char *data, Py_ssize_t n)
{
    uint32_t crc = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        crc = (crc << 8) ^ crc_table[(crc >> 24) ^ data[i]];
    for (size_t len = (size_t)n; len; len >>= 8)
        crc = (crc << 8) ^ crc_table[(crc >> 24) ^ (len & 0xFF)];
    return ~crc;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\x0b' || c == '\x0c';
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static int is_alnum(unsigned char c) { return is_digit(c) || is_upper(c) || (c >= 'a' && c <= 'z'); }
static int is_hex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static int is_id_char(unsigned char c) { return is_alnum(c) || c == '.' || c == '_' || c == ':' || c == '-'; }

/* ``[pred]{lo,hi}`` at s[*at], ending before a ``stop`` character: the run's length, or -1. */
static Py_ssize_t run(const unsigned char *s, Py_ssize_t n, Py_ssize_t *at, int (*pred)(unsigned char),
                      Py_ssize_t lo, Py_ssize_t hi)
{
    Py_ssize_t start = *at, i = start;
    while (i < n && i - start < hi && pred(s[i]))
        i++;
    if (i - start < lo)
        return -1;
    *at = i;
    return i - start;
}

static long digits_value(const unsigned char *s, Py_ssize_t n)
{
    long v = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

/* Frame types and outcomes, handed over once by ``configure``. */
static PyObject *Frame, *CaseRef, *CaseRow, *Verdict, *APPLIED, *DUPLICATE, *NEW, *RETRANSMIT, *ONE, *REC, *ID;

/* A tuple of ``type`` (a NamedTuple) holding ``items`` (references stolen), as ``tuple.__new__``. */
static PyObject *new_row(PyObject *type, PyObject **items, Py_ssize_t n)
{
    PyTypeObject *t = (PyTypeObject *)type;
    PyObject *row = t->tp_alloc(t, n);
    if (row == NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(items[i]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (items[i] == NULL) {
            Py_DECREF(row);
            for (Py_ssize_t j = i + 1; j < n; j++)
                Py_XDECREF(items[j]);
            return NULL;
        }
        PyTuple_SET_ITEM(row, i, items[i]);
    }
    return row;
}

/* ``parse_common(frame_id, text)`` for a line in the common form; Py_None (a new reference) for
 * anything else, which the caller gives to the Python code. */
static PyObject *parse_one(PyObject *frame_id, PyObject *text)
{
    if (!PyUnicode_IS_ASCII(frame_id) || !PyUnicode_IS_ASCII(text))
        Py_RETURN_NONE;
    const unsigned char *id = PyUnicode_1BYTE_DATA(frame_id);
    Py_ssize_t idn = PyUnicode_GET_LENGTH(frame_id);
    if (idn < 1 || idn > 64)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < idn; i++)
        if (!is_id_char(id[i]))
            Py_RETURN_NONE;
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), at = 0;
    if (run(s, n, &at, is_space, 0, 96) < 0)
        Py_RETURN_NONE;
    Py_ssize_t begin = at;
    if (n - at < 2 || s[at] != 'H' || s[at + 1] != '1')
        Py_RETURN_NONE;
    at += 2;
    Py_ssize_t f[6][2]; /* start and length of each field: seq, site, need, headcount, pri, hh */
    static const Py_ssize_t lo[6] = {1, 1, 3, 1, 1, 2}, hi[6] = {4, 8, 3, 6, 3, 2};
    int (*const preds[6])(unsigned char) = {is_digit, is_alnum, is_upper, is_digit, is_digit, is_hex};
    for (int k = 0; k < 6; k++) {
        if (at >= n || s[at] != '|')
            Py_RETURN_NONE;
        at++;
        if (k == 5) {
            if (at >= n || s[at] != '#')
                Py_RETURN_NONE;
            at++;
        }
        f[k][0] = at;
        f[k][1] = run(s, n, &at, preds[k], lo[k], hi[k]);
        if (f[k][1] < 0)
            Py_RETURN_NONE;
    }
    Py_ssize_t end = at;
    if (run(s, n, &at, is_space, 0, 96) < 0 || at != n)
        Py_RETURN_NONE;
    long seq = digits_value(s + f[0][0], f[0][1]);
    /* The case key: an id ``<record>-<digits>`` names its record, and its digits must be the seq. */
    Py_ssize_t dash = -1;
    for (Py_ssize_t i = idn - 1; i >= 0; i--)
        if (id[i] == '-') {
            dash = i;
            break;
        }
    int rec = dash > 0 && dash < idn - 1;
    for (Py_ssize_t i = dash + 1; rec && i < idn; i++)
        rec = is_digit(id[i]);
    if (rec) {
        long v = 0;
        for (Py_ssize_t i = dash + 1; i < idn; i++) {
            v = v * 10 + (id[i] - '0');
            if (v > 100000) /* more than any seq: a mismatch, which parse words */
                Py_RETURN_NONE;
        }
        if (v != seq)
            Py_RETURN_NONE;
    }
    Py_ssize_t body_n = f[5][0] - 2 - begin; /* up to the "|#" */
    uint32_t sum = cksum(s + begin, body_n) & 0xFF;
    static const char hex[] = "0123456789abcdef";
    char hh[2] = {(char)Py_TOLOWER(s[f[5][0]]), (char)Py_TOLOWER(s[f[5][0] + 1])};
    int trailer_ok = hh[0] == hex[sum >> 4] && hh[1] == hex[sum & 0xF];
    PyObject *canon = PyUnicode_New(end - begin, 127);
    if (canon == NULL)
        return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(canon);
    memcpy(out, s + begin, (size_t)(end - begin));
    out[end - begin - 2] = (Py_UCS1)hh[0];
    out[end - begin - 1] = (Py_UCS1)hh[1];
    PyObject *key;
    if (rec) {
        PyObject *record = PyUnicode_Substring(frame_id, 0, dash);
        key = record ? PyUnicode_Concat(REC, record) : NULL;
        Py_XDECREF(record);
    } else
        key = PyUnicode_Concat(ID, frame_id);
    Py_INCREF(frame_id);
    PyObject *items[9] = {
        frame_id, canon, PyLong_FromLong(seq),
        PyUnicode_Substring(text, f[1][0], f[1][0] + f[1][1]),
        PyUnicode_Substring(text, f[2][0], f[2][0] + f[2][1]),
        PyLong_FromLong(digits_value(s + f[3][0], f[3][1])),
        PyLong_FromLong(digits_value(s + f[4][0], f[4][1])),
        Py_NewRef(trailer_ok ? Py_True : Py_False), key,
    };
    return new_row(Frame, items, 9);
}

static PyObject *configure(PyObject *self, PyObject *args)
{
    PyObject *frame, *case_ref, *case_row, *verdict, *applied, *duplicate;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO", &PyType_Type, &frame, &PyType_Type, &case_ref, &PyType_Type,
                          &case_row, &PyType_Type, &verdict, &applied, &duplicate))
        return NULL;
    PyObject *types[4] = {frame, case_ref, case_row, verdict};
    for (int i = 0; i < 4; i++)
        if (!PyType_IsSubtype((PyTypeObject *)types[i], &PyTuple_Type)) {
            PyErr_SetString(PyExc_TypeError, "row types must be tuples");
            return NULL;
        }
    Py_XSETREF(Frame, Py_NewRef(frame));
    Py_XSETREF(CaseRef, Py_NewRef(case_ref));
    Py_XSETREF(CaseRow, Py_NewRef(case_row));
    Py_XSETREF(Verdict, Py_NewRef(verdict));
    Py_XSETREF(APPLIED, Py_NewRef(applied));
    Py_XSETREF(DUPLICATE, Py_NewRef(duplicate));
    Py_RETURN_NONE;
}

/* parse_into(offers, parse_common, parse) -> list: parse_all's loop, without its memo of re-sends:
 * in C a line parses in less time than the memo takes to find it (a pair to build, hash and look
 * up in a dict of a whole call's lines). */
static PyObject *parse_into(PyObject *self, PyObject *args)
{
    PyObject *offers, *common, *plain;
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &offers, &common, &plain))
        return NULL;
    if (Frame == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(offers);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *offer = PyList_GET_ITEM(offers, i), *parsed;
        if (!PyTuple_Check(offer) || PyTuple_GET_SIZE(offer) < 2) {
            PyErr_SetString(PyExc_TypeError, "offers must be tuples");
            Py_DECREF(out);
            return NULL;
        }
        PyObject *fid = PyTuple_GET_ITEM(offer, 0), *text = PyTuple_GET_ITEM(offer, 1);
        if (PyUnicode_CheckExact(fid) && PyUnicode_CheckExact(text)) {
            parsed = parse_one(fid, text);
            if (parsed == Py_None) {
                Py_DECREF(parsed);
                parsed = PyObject_CallFunctionObjArgs(common, fid, text, NULL);
            }
        } else
            parsed = PyObject_CallFunctionObjArgs(plain, fid, text, NULL);
        if (parsed == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, parsed);
    }
    return out;
}

/* The test ``settled and settled.get(key)``: 1 when the key has settled versions. */
static int has_settled(PyObject *settled, PyObject *key)
{
    if (PyDict_GET_SIZE(settled) == 0)
        return 0;
    PyObject *v = PyDict_GetItemWithError(settled, key);
    if (v == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return PyObject_IsTrue(v);
}

static int add_one(PyObject *counts, PyObject *key, long start)
{
    PyObject *had = PyDict_GetItemWithError(counts, key);
    if (had == NULL && PyErr_Occurred())
        return -1;
    long value = had == NULL ? start : PyLong_AsLong(had);
    if (value == -1 && PyErr_Occurred())
        return -1;
    PyObject *now = PyLong_FromLong(value + 1);
    if (now == NULL)
        return -1;
    int r = PyDict_SetItem(counts, key, now);
    Py_DECREF(now);
    return r;
}

static int append_new(PyObject *list, PyObject *item)
{
    if (item == NULL)
        return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* decide_common(offers, results, files, state, decide) -> headcount of the applied frames.
 * ``files``: the label shown per offer (a list), or one label for all (anything else).
 * ``state``: (seen, cases, settled, fresh, again, bumps, case_rows, verdicts, applied_ids,
 * applied_texts, now, source), the names ``decide_all`` gives them. */
static PyObject *decide_common(PyObject *self, PyObject *args)
{
    PyObject *offers, *results, *files, *state, *decide;
    if (!PyArg_ParseTuple(args, "O!O!OO!O", &PyList_Type, &offers, &PyList_Type, &results, &files,
                          &PyTuple_Type, &state, &decide))
        return NULL;
    PyObject *seen, *cases, *settled, *fresh, *again, *bumps, *case_rows, *verdicts, *ids, *texts, *now, *source;
    if (!PyArg_ParseTuple(state, "O!O!O!O!O!O!O!O!O!O!OU", &PyDict_Type, &seen, &PyDict_Type, &cases,
                          &PyDict_Type, &settled, &PySet_Type, &fresh, &PyDict_Type, &again, &PyDict_Type,
                          &bumps, &PyList_Type, &case_rows, &PyList_Type, &verdicts, &PyList_Type, &ids,
                          &PyList_Type, &texts, &now, &source))
        return NULL;
    if (Frame == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(offers);
    if (PyList_GET_SIZE(results) != n || (PyList_Check(files) && PyList_GET_SIZE(files) != n)) {
        PyErr_SetString(PyExc_ValueError, "offers, results and files differ in length");
        return NULL;
    }
    long long heads = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *offer = PyList_GET_ITEM(offers, i), *parsed = PyList_GET_ITEM(results, i);
        PyObject *file = PyList_Check(files) ? PyList_GET_ITEM(files, i) : files;
        if (!PyTuple_Check(offer) || PyTuple_GET_SIZE(offer) < 4) {
            PyErr_SetString(PyExc_TypeError, "offers must be Offers");
            return NULL;
        }
        PyObject *line = PyTuple_GET_ITEM(offer, 3);
        if (Py_TYPE(parsed) == (PyTypeObject *)Frame && PyTuple_GET_SIZE(parsed) == 9 &&
            PyTuple_GET_ITEM(parsed, 7) == Py_True) {
            PyObject *frame_id = PyTuple_GET_ITEM(parsed, 0), *text = PyTuple_GET_ITEM(parsed, 1);
            PyObject *key = PyTuple_GET_ITEM(parsed, 8);
            PyObject *witness = PyDict_GetItemWithError(seen, frame_id);
            if (witness == NULL && PyErr_Occurred())
                return NULL;
            if (witness == NULL || witness == Py_None) {
                int known = PyDict_Contains(cases, key);
                int held = known ? 0 : has_settled(settled, key);
                if (known < 0 || held < 0)
                    return NULL;
                if (!known && !held) {
                    PyObject *site = PyTuple_GET_ITEM(parsed, 3), *need = PyTuple_GET_ITEM(parsed, 4);
                    PyObject *head = PyTuple_GET_ITEM(parsed, 5), *pri = PyTuple_GET_ITEM(parsed, 6);
                    long headcount = PyLong_AsLong(head);
                    if (headcount == -1 && PyErr_Occurred())
                        return NULL;
                    PyObject *payload = PyTuple_Pack(4, site, need, head, pri);
                    PyObject *ref_items[3] = {Py_NewRef(frame_id), Py_NewRef(text), payload};
                    PyObject *ref = payload ? new_row(CaseRef, ref_items, 3) : NULL;
                    if (payload == NULL) {
                        Py_DECREF(frame_id);
                        Py_DECREF(text);
                    }
                    if (ref == NULL)
                        return NULL;
                    int r = PyDict_SetItem(seen, frame_id, text);
                    if (r == 0)
                        r = PyDict_SetItem(cases, key, ref);
                    Py_DECREF(ref);
                    if (r < 0 || PySet_Add(fresh, frame_id) < 0 || PyList_Append(ids, frame_id) < 0 ||
                        PyList_Append(texts, text) < 0)
                        return NULL;
                    PyObject *row[12] = {Py_NewRef(key), Py_NewRef(frame_id), Py_NewRef(text),
                                         Py_NewRef(PyTuple_GET_ITEM(parsed, 2)), Py_NewRef(site), Py_NewRef(need),
                                         Py_NewRef(head), Py_NewRef(pri), Py_NewRef(now), Py_NewRef(now),
                                         Py_NewRef(source), Py_NewRef(ONE)};
                    if (append_new(case_rows, new_row(CaseRow, row, 12)) < 0)
                        return NULL;
                    heads += headcount;
                    PyObject *v[6] = {Py_NewRef(frame_id), Py_NewRef(APPLIED), Py_NewRef(NEW), Py_NewRef(source),
                                      Py_NewRef(file), Py_NewRef(line)};
                    if (append_new(verdicts, new_row(Verdict, v, 6)) < 0)
                        return NULL;
                    continue;
                }
            } else {
                int same = PyObject_RichCompareBool(witness, text, Py_EQ);
                if (same < 0)
                    return NULL;
                int held = same ? has_settled(settled, key) : 0;
                if (held < 0)
                    return NULL;
                if (same && !held) {
                    int mine = PySet_Contains(fresh, frame_id);
                    if (mine < 0 || add_one(mine ? again : bumps, frame_id, mine ? 1 : 0) < 0)
                        return NULL;
                    PyObject *v[6] = {Py_NewRef(frame_id), Py_NewRef(DUPLICATE), Py_NewRef(RETRANSMIT),
                                      Py_NewRef(source), Py_NewRef(file), Py_NewRef(line)};
                    if (append_new(verdicts, new_row(Verdict, v, 6)) < 0)
                        return NULL;
                    continue;
                }
            }
        }
        Py_INCREF(offer);
        Py_INCREF(parsed);
        PyObject *r = PyObject_CallFunctionObjArgs(decide, offer, parsed, NULL);
        Py_DECREF(offer);
        Py_DECREF(parsed);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    return PyLong_FromLongLong(heads);
}

static PyObject *py_parse_one(PyObject *self, PyObject *args)
{
    PyObject *fid, *text;
    if (!PyArg_ParseTuple(args, "UU", &fid, &text))
        return NULL;
    if (Frame == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    return parse_one(fid, text);
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "The row types and outcomes the loops build."},
    {"parse_one", py_parse_one, METH_VARARGS, "A Frame for a line in the common form, else None."},
    {"parse_into", parse_into, METH_VARARGS, "parse_all's loop."},
    {"decide_common", decide_common, METH_VARARGS, "decide_all's loop."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastpath", NULL, -1, methods};

PyMODINIT_FUNC PyInit__fastpath(void)
{
    make_table();
    NEW = PyUnicode_InternFromString("new");
    RETRANSMIT = PyUnicode_InternFromString("retransmit");
    REC = PyUnicode_InternFromString("rec:");
    ID = PyUnicode_InternFromString("id:");
    ONE = PyLong_FromLong(1);
    if (NEW == NULL || RETRANSMIT == NULL || REC == NULL || ID == NULL || ONE == NULL)
        return NULL;
    return PyModule_Create(&module);
}
