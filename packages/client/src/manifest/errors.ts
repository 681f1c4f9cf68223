/** The error every manifest problem becomes. */

/**
 * A manifest that cannot be used. The message names the file (when known) and the key path of the
 * offending value, e.g. `manifest tools.json: tools.read_file.command must be a non-empty array of strings`.
 */
export class ManifestError extends Error {
  override readonly name = 'ManifestError';
  /**
   * @param keyPath where in the manifest, e.g. `tools.read_file.command[1]` (`''` for the whole document)
   * @param problem what is wrong, e.g. `must be a non-empty array of strings`
   * @param file the manifest file, when read from disk
   */
  constructor(
    readonly keyPath: string,
    readonly problem: string,
    readonly file?: string,
  ) {
    super(`${file !== undefined ? `manifest ${file}: ` : ''}${keyPath ? `${keyPath} ` : ''}${problem}`);
  }
}
