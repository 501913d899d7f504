-- job_submit.lua for `schedlab slurm` (docs/slurm.md): every job submitted to a partition that
-- schedlab decides arrives held (priority 0), so that Slurm starts it only when the adapter pins
-- it to its nodes and releases it. Install beside slurm.conf with JobSubmitPlugins=lua.
-- The partitions schedlab decides (a job without a partition goes to the default one, listed
-- here as DEFAULT when the default partition is one of them):
local HOLD = { ["batch"] = true, DEFAULT = true }

function slurm_job_submit(job_desc, part_list, submit_uid)
    local partition = job_desc.partition or "DEFAULT"
    if HOLD[partition] then
        job_desc.priority = 0
    end
    return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
    return slurm.SUCCESS
end
