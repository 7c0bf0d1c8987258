/* lib/model/svg.h -- a minimal SVG writer (text built in memory, shapes clipped to the
 * canvas, text escaped for XML) and the simulator's Gantt chart drawn with it.  Both
 * live in lib/model/sim_svg.c; the library never writes files, callers get the text. */
#ifndef VLPLAN_SVG_H
#define VLPLAN_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "sim.h"
#include "strbuf.h"

typedef struct vl_svg {
    vl_strbuf text; /* a failed append surfaces in vl_svg_finish as VL_ENOMEM */
    double w, h;    /* canvas size in px; every shape is clipped to it */
} vl_svg;

/** Start a document of w × h px with a white background.  Never fails by itself;
 *  allocation failures surface in vl_svg_finish. */
void vl_svg_begin(vl_svg *g, double w, double h);

/** Rectangle clipped to the canvas (nothing drawn if it falls outside).  cls and tip
 *  (a tooltip, escaped) may be NULL. */
void vl_svg_rect(vl_svg *g, double x, double y, double w, double h, const char *fill,
                 const char *cls, const char *tip);

/** Line clipped to the canvas box (endpoints clamped; meant for axis-parallel lines). */
void vl_svg_line(vl_svg *g, double x1, double y1, double x2, double y2, const char *stroke,
                 double width);

/** Text at (x, y) clamped to the canvas; anchor "start", "middle" or "end"; text is
 *  escaped (&, <, >, ", ') so any string is safe. */
void vl_svg_text(vl_svg *g, double x, double y, double size, const char *anchor,
                 const char *fill, const char *text);

/** Close the document and hand the text over (*out malloc'd, caller frees).
 *  @return VL_OK, or VL_ENOMEM (g's memory is released either way). */
vl_status vl_svg_finish(vl_svg *g, char **out, vl_err *err);

/** Gantt chart of a simulated iteration (trace filled by vl_sim_iter): one lane per
 *  (rank, stage), tasks coloured by kind, idle lane background, legend, time axis.
 *  title is escaped.  @return VL_OK or VL_ENOMEM. */
vl_status vl_svg_gantt(const vl_sim_trace *t, const char *title, char **out, vl_err *err);

#endif
