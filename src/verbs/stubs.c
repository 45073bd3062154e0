/* SPDX-License-Identifier: MIT */
/*
 * Exports that exist so that every client links and loads (all of them are
 * BIND_NOW, docs/facts/verbs-abi.md §0), but that xrxe does not implement. Each
 * answers the way rdma-core reports an unsupported operation: a positive
 * errno where the function returns an int error code, NULL with errno for
 * constructors, nothing for void functions. docs/verbs-shim.md has the table.
 */
#include "verbs/shim.h"

#include <stdio.h>

/* --- IBVERBS_1.10 .. 1.13: ECE, dma-buf (import/export: import.c) ------------------------- */

/* Enhanced Connection Establishment: librdmacm calls these on every connect
 * and treats EOPNOTSUPP as "no ECE". */
int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp, (void)ece;
	return EOPNOTSUPP;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
				 int fd, int access)
{
	(void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
	return xrxe_null_errno(EOPNOTSUPP);
}

/* --- IBVERBS_PRIVATE_34: the provider interface ----------------------------------------
 * Only the real libmlx5.so.1 and libefa.so.1 (NEEDED by perftest, libfabric,
 * UCX) import these. Their constructors call verbs_register_driver_34 before
 * main; since the shim never asks a provider to open anything, no other entry
 * point is ever reached, but every one must resolve. */

XRXE_API int verbs_allow_disassociate_destroy; /* an int object in rdma-core */

XRXE_API void verbs_register_driver_34(const void *ops);
void verbs_register_driver_34(const void *ops)
{
	(void)ops; /* providers are not used: xrxe is the only device */
}

/* Logging from a provider, possibly on a context that is not theirs
 * (efadv_query_device on our context): accept anything, print nothing. */
XRXE_API void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...);
void __verbs_log(void *ctx, uint32_t level, const char *fmt, ...)
{
	(void)ctx, (void)level, (void)fmt;
}

XRXE_API void verbs_set_ops(void *vctx, const void *ops);
void verbs_set_ops(void *vctx, const void *ops)
{
	(void)vctx, (void)ops;
}

XRXE_API void verbs_uninit_context(void *vctx);
void verbs_uninit_context(void *vctx)
{
	(void)vctx;
}

XRXE_API void *_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t size, void *offset,
					     uint32_t driver_id);
void *_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t size, void *offset,
				    uint32_t driver_id)
{
	(void)device, (void)cmd_fd, (void)size, (void)offset, (void)driver_id;
	return xrxe_null_errno(EOPNOTSUPP);
}

XRXE_API struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	(void)device, (void)private_data;
	return xrxe_null_errno(EOPNOTSUPP);
}

XRXE_API unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	(void)link;
	return num_attrs;
}

XRXE_API int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt,
				       ...);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, void *sysfs_dev, const char *fnfmt, ...)
{
	(void)buf, (void)size, (void)sysfs_dev, (void)fnfmt;
	errno = ENOENT;
	return -1;
}

/* The kernel command wrappers: int functions returning a positive errno. The
 * parameters differ per function and are never looked at. */
#define CMD_STUB(name)                   \
	XRXE_API int name(void);         \
	int name(void)                   \
	{                                \
		errno = EOPNOTSUPP;      \
		return EOPNOTSUPP;       \
	}

CMD_STUB(execute_ioctl)
CMD_STUB(verbs_init_cq)
CMD_STUB(ibv_cmd_advise_mr)
CMD_STUB(ibv_cmd_alloc_dm)
CMD_STUB(ibv_cmd_alloc_mw)
CMD_STUB(ibv_cmd_alloc_pd)
CMD_STUB(ibv_cmd_attach_mcast)
CMD_STUB(ibv_cmd_close_xrcd)
CMD_STUB(ibv_cmd_create_ah)
CMD_STUB(ibv_cmd_create_counters)
CMD_STUB(ibv_cmd_create_cq)
CMD_STUB(ibv_cmd_create_cq_ex)
CMD_STUB(ibv_cmd_create_flow)
CMD_STUB(ibv_cmd_create_flow_action_esp)
CMD_STUB(ibv_cmd_create_qp)
CMD_STUB(ibv_cmd_create_qp_ex)
CMD_STUB(ibv_cmd_create_qp_ex2)
CMD_STUB(ibv_cmd_create_rwq_ind_table)
CMD_STUB(ibv_cmd_create_srq)
CMD_STUB(ibv_cmd_create_srq_ex)
CMD_STUB(ibv_cmd_create_wq)
CMD_STUB(ibv_cmd_dealloc_mw)
CMD_STUB(ibv_cmd_dealloc_pd)
CMD_STUB(ibv_cmd_dereg_mr)
CMD_STUB(ibv_cmd_destroy_ah)
CMD_STUB(ibv_cmd_destroy_counters)
CMD_STUB(ibv_cmd_destroy_cq)
CMD_STUB(ibv_cmd_destroy_flow)
CMD_STUB(ibv_cmd_destroy_flow_action)
CMD_STUB(ibv_cmd_destroy_qp)
CMD_STUB(ibv_cmd_destroy_rwq_ind_table)
CMD_STUB(ibv_cmd_destroy_srq)
CMD_STUB(ibv_cmd_destroy_wq)
CMD_STUB(ibv_cmd_detach_mcast)
CMD_STUB(ibv_cmd_free_dm)
CMD_STUB(ibv_cmd_get_context)
CMD_STUB(ibv_cmd_modify_cq)
CMD_STUB(ibv_cmd_modify_flow_action_esp)
CMD_STUB(ibv_cmd_modify_qp)
CMD_STUB(ibv_cmd_modify_qp_ex)
CMD_STUB(ibv_cmd_modify_srq)
CMD_STUB(ibv_cmd_modify_wq)
CMD_STUB(ibv_cmd_open_qp)
CMD_STUB(ibv_cmd_open_xrcd)
CMD_STUB(ibv_cmd_poll_cq)
CMD_STUB(ibv_cmd_post_recv)
CMD_STUB(ibv_cmd_post_send)
CMD_STUB(ibv_cmd_post_srq_recv)
CMD_STUB(ibv_cmd_query_context)
CMD_STUB(ibv_cmd_query_device_any)
CMD_STUB(ibv_cmd_query_mr)
CMD_STUB(ibv_cmd_query_port)
CMD_STUB(ibv_cmd_query_qp)
CMD_STUB(ibv_cmd_query_srq)
CMD_STUB(ibv_cmd_read_counters)
CMD_STUB(ibv_cmd_reg_dm_mr)
CMD_STUB(ibv_cmd_reg_dmabuf_mr)
CMD_STUB(ibv_cmd_reg_mr)
CMD_STUB(ibv_cmd_req_notify_cq)
CMD_STUB(ibv_cmd_rereg_mr)
CMD_STUB(ibv_cmd_resize_cq)

/* --- compat aliases ------------------------------------------------------------------
 * name@IBVERBS_1.0 served binaries linked against libibverbs before 1.1, with
 * the old struct layouts (struct ibv_device_1_0 & co.). No client on Debian 12
 * uses them (docs/facts/verbs-abi.md §5.1); they fail cleanly rather than hand new
 * objects to code expecting the old ones. */

#define COMPAT_PTR(name)                                                  \
	XRXE_COMPAT(#name "@IBVERBS_1.0") void *xrxe_compat_##name(void); \
	void *xrxe_compat_##name(void)                                    \
	{                                                                 \
		return xrxe_null_errno(EOPNOTSUPP);                       \
	}
#define COMPAT_INT(name)                                                \
	XRXE_COMPAT(#name "@IBVERBS_1.0") int xrxe_compat_##name(void); \
	int xrxe_compat_##name(void)                                    \
	{                                                               \
		errno = EOPNOTSUPP;                                     \
		return EOPNOTSUPP;                                      \
	}
#define COMPAT_VOID(name)                                                \
	XRXE_COMPAT(#name "@IBVERBS_1.0") void xrxe_compat_##name(void); \
	void xrxe_compat_##name(void)                                    \
	{                                                                \
	}

XRXE_COMPAT("ibv_get_device_list@IBVERBS_1.0") void *xrxe_compat_ibv_get_device_list(int *num);
void *xrxe_compat_ibv_get_device_list(int *num)
{
	if (num)
		*num = 0;
	return xrxe_null_errno(EOPNOTSUPP);
}

XRXE_COMPAT("ibv_get_device_guid@IBVERBS_1.0") uint64_t xrxe_compat_ibv_get_device_guid(void);
uint64_t xrxe_compat_ibv_get_device_guid(void)
{
	return 0;
}

COMPAT_VOID(ibv_ack_async_event)
COMPAT_VOID(ibv_ack_cq_events)
COMPAT_VOID(ibv_free_device_list)
COMPAT_PTR(ibv_alloc_pd)
COMPAT_PTR(ibv_create_ah)
COMPAT_PTR(ibv_create_cq)
COMPAT_PTR(ibv_create_qp)
COMPAT_PTR(ibv_create_srq)
COMPAT_PTR(ibv_get_device_name)
COMPAT_PTR(ibv_open_device)
COMPAT_PTR(ibv_reg_mr)
COMPAT_INT(ibv_attach_mcast)
COMPAT_INT(ibv_close_device)
COMPAT_INT(ibv_dealloc_pd)
COMPAT_INT(ibv_dereg_mr)
COMPAT_INT(ibv_destroy_ah)
COMPAT_INT(ibv_destroy_cq)
COMPAT_INT(ibv_destroy_qp)
COMPAT_INT(ibv_destroy_srq)
COMPAT_INT(ibv_detach_mcast)
COMPAT_INT(ibv_get_async_event)
COMPAT_INT(ibv_get_cq_event)
COMPAT_INT(ibv_modify_qp)
COMPAT_INT(ibv_modify_srq)
COMPAT_INT(ibv_query_device)
COMPAT_INT(ibv_query_gid)
COMPAT_INT(ibv_query_pkey)
COMPAT_INT(ibv_query_port)
COMPAT_INT(ibv_query_qp)
COMPAT_INT(ibv_query_srq)
COMPAT_INT(ibv_resize_cq)

/* Pre-1.1 provider registration (name@IBVERBS_1.1 only): providers are not
 * used. */
XRXE_COMPAT("ibv_register_driver@IBVERBS_1.1") void xrxe_compat_ibv_register_driver(const char *name,
										     void *init);
void xrxe_compat_ibv_register_driver(const char *name, void *init)
{
	(void)name, (void)init;
}
