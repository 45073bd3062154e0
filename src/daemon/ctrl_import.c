// SPDX-License-Identifier: MIT
/*
 * IMPORT (abi.h): what ibv_import_pd and ibv_import_mr learn about an object
 * of the connection. An imported verbs context shares its exporter's
 * connection (docs/verbs-shim.md "Importing"), so the object is already this
 * connection's: the request is a typed lookup that creates, counts and
 * charges nothing, and can name nothing outside the connection's table.
 */
#include <errno.h>

#include "daemon/ctrl_internal.h"

int xrxe_ctrli_op_import(struct conn *c, const void *req, int *fds, struct reply *r)
{
	const struct xrxe_ctrl_import *m = req;
	struct xrxe_ctrl_import_reply *rep = REPLY(r, struct xrxe_ctrl_import_reply);
	struct obj *o;

	(void)fds;
	switch (m->type) {
	case XRXE_IMPORT_PD:
		o = xrxe_ctrli_obj_lookup(c, m->handle, OBJ_PD);
		break;
	case XRXE_IMPORT_MR:
		o = xrxe_ctrli_obj_lookup(c, m->handle, OBJ_MR);
		break;
	default:
		return -EINVAL;
	}
	/* The kernel answers a lookup of a handle it does not hold (or of
	 * another type) with ENOENT; rdma-core passes it on. */
	if (!o)
		return -ENOENT;
	rep->handle = o->handle;
	if (o->type == OBJ_MR) {
		const struct obj_mr *mr = (const struct obj_mr *)o;

		rep->lkey = mr->lkey;
		rep->rkey = mr->rkey;
		rep->access = mr->access;
		rep->length = mr->length;
		rep->iova = mr->iova;
	}
	xrxe_ctrli_reply_len(r, sizeof(*rep));
	return 0;
}
