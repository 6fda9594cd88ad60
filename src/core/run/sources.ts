// A design's sources as a front end finds them before any run: the folder it lives in, the
// repository search for what it needs, its FuseSoC/Bender manifest, and its project file
// (chorus.json). Light modules only: the extension host bundles these, never the engine.
export { DesignError } from '../design/errors.js';
export { checkVerilatorArgs } from '../design/verilatorArgs.js';
export { collectFolder, looksLikeTestbench, readIfReadable, SOURCE_EXT, HEADER_EXT } from '../design/folder.js';
export { discover } from '../design/discover.js';
export { findManifest } from '../design/manifest/index.js';
export {
  PROJECT_FILE,
  findProjectFile,
  projectToDesign,
  readProjectFile,
  validateProject,
  withDiscovered,
  writeProjectFile,
} from '../design/project.js';
export { projectFileSchema, type ProjectFile } from '../design/projectSchema.js';
