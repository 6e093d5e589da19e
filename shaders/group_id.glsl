// The flat workgroup index over a 2-D grid (one workgroup per output element or row).
uint group_id() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
