// When offering to save the design settings as chorus.json is worth a prompt: only when the design
// needed more than its own file, so a single-file design never gets asked after every generation.
import type { ProjectFile } from '../core/run/types.js';

/** True when the settings hold something a user would not want to give again: several files, a
 * file list or manifest, include folders, defines, parameters, or a top chosen among several. */
export function worthAProjectFile(p: ProjectFile, topChosenAmongSeveral = false): boolean {
  return (
    p.files.length > 1 ||
    !!p.fileLists?.length ||
    !!p.manifest ||
    !!p.includeDirs?.length ||
    !!p.defines?.length ||
    !!p.params?.length ||
    topChosenAmongSeveral
  );
}
